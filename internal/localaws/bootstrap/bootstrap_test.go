package bootstrap

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

const (
	ca = "Y2EtYnVuZGxlCg=="

	// al2023MIME is shaped like a Karpenter AL2023 launch: a user shell
	// part, a user NodeConfig, and Karpenter's NodeConfig last.
	al2023MIME = "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"//\"\r\n\r\n" +
		"--//\r\nContent-Type: text/x-shellscript; charset=\"us-ascii\"\r\n\r\n#!/bin/bash\necho hi\r\n" +
		"--//\r\nContent-Type: application/node.eks.aws\r\n\r\n" +
		"apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n    name: user-cluster\n  kubelet:\n    config:\n      maxPods: 42\n      shutdownGracePeriod: 30s\n    flags:\n    - --node-labels=user=x,team=a\n\r\n" +
		"--//\r\nContent-Type: application/node.eks.aws\r\n\r\n" +
		`# Karpenter Generated NodeConfig
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
metadata: {}
spec:
  cluster:
    apiServerEndpoint: https://test-cluster
    certificateAuthority: Y2EtYnVuZGxlCg==
    cidr: 10.100.0.0/16
    name: test-cluster
  containerd: {}
  instance:
    localStorage: {}
  kubelet:
    config:
      clusterDNS:
      - 10.0.100.10
      - 10.0.100.11
      maxPods: 110
      registerWithTaints:
      - effect: NoSchedule
        key: dedicated
        value: gpu
      - effect: NoExecute
        key: karpenter.sh/unregistered
    flags:
    - --node-labels="karpenter.sh/capacity-type=spot,karpenter.sh/nodepool=default,team=b"
` + "\r\n--//--\r\n"

	al2023YAML = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: my-cluster
    apiServerEndpoint: https://example.com
    certificateAuthority: Y2EtYnVuZGxlCg==
    cidr: 10.100.0.0/16
  kubelet:
    config:
      maxPods: 17
    flags:
    - --node-labels=a=b
    - "--register-with-taints=x=y:PreferNoSchedule"
    - --max-pods=20
`

	al2MIME = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "Running custom user data script"

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash -xe
exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1
/etc/eks/bootstrap.sh 'test-cluster' --apiserver-endpoint 'https://test-cluster' --b64-cluster-ca 'Y2EtYnVuZGxlCg==' \
--dns-cluster-ip '10.0.100.10' \
--use-max-pods false \
--kubelet-extra-args '--node-labels="karpenter.sh/capacity-type=on-demand,karpenter.sh/nodepool=default" --register-with-taints="dedicated=gpu:NoSchedule,karpenter.sh/unregistered:NoExecute" --max-pods=110' \
--local-disks raid0
--//--
`

	// al2Custom is a hand-written Custom AMI script.
	al2Custom = `#!/bin/bash
set -ex
# join the cluster
B64=abc /etc/eks/bootstrap.sh my-cluster --b64-cluster-ca="` + ca + `" --kubelet-extra-args "--node-labels=role=worker --register-with-taints karpenter.sh/unregistered:NoExecute --max-pods 20"
systemctl restart something
`

	bottlerocketTOML = `[settings]
[settings.kubernetes]
api-server = 'https://test-cluster'
cloud-provider = 'external'
cluster-certificate = 'Y2EtYnVuZGxlCg=='
cluster-name = 'test-cluster'
cluster-dns-ip = '10.0.100.10'
max-pods = 110

[settings.kubernetes.node-labels]
custom-node-label = 'custom'
'karpenter.sh/capacity-type' = 'on-demand'

[settings.kubernetes.node-taints]
baz = ['bin:NoExecute']
foo = ['bar:NoExecute', 'other:NoSchedule']
'karpenter.sh/unregistered' = [':NoExecute']

[settings.network]
hostname = 'test.local'
`

	windowsPS = `<powershell>
Write-Host "Running custom user data script"
[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"
& $EKSBootstrapScriptFile -EKSClusterName 'test-cluster' -APIServerEndpoint 'https://test-cluster' -Base64ClusterCA 'Y2EtYnVuZGxlCg==' -KubeletExtraArgs '--node-labels="karpenter.sh/capacity-type=spot,kubernetes.io/os=windows" --register-with-taints="karpenter.sh/unregistered:NoExecute" --max-pods=110' -DNSClusterIP '10.0.100.10'
</powershell>`
)

func unregistered() corev1.Taint {
	return corev1.Taint{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute}
}

func TestParse(t *testing.T) {
	al2023Want := Config{
		Family: "AL2023", ClusterName: "test-cluster", APIServerEndpoint: "https://test-cluster", CABundle: ca,
		Labels:  map[string]string{"user": "x", "team": "b", "karpenter.sh/capacity-type": "spot", "karpenter.sh/nodepool": "default"},
		Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, unregistered()},
		MaxPods: ptr.To[int32](110), ClusterDNS: []string{"10.0.100.10", "10.0.100.11"},
	}
	al2Want := Config{
		Family: "AL2", ClusterName: "test-cluster", APIServerEndpoint: "https://test-cluster", CABundle: ca,
		Labels:  map[string]string{"karpenter.sh/capacity-type": "on-demand", "karpenter.sh/nodepool": "default"},
		Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, unregistered()},
		MaxPods: ptr.To[int32](110), ClusterDNS: []string{"10.0.100.10"},
	}
	brWant := Config{
		Family: "Bottlerocket", ClusterName: "test-cluster", APIServerEndpoint: "https://test-cluster", CABundle: ca,
		Labels: map[string]string{"custom-node-label": "custom", "karpenter.sh/capacity-type": "on-demand"},
		Taints: []corev1.Taint{
			{Key: "baz", Value: "bin", Effect: corev1.TaintEffectNoExecute},
			{Key: "foo", Value: "bar", Effect: corev1.TaintEffectNoExecute},
			{Key: "foo", Value: "other", Effect: corev1.TaintEffectNoSchedule},
			unregistered(),
		},
		MaxPods: ptr.To[int32](110), ClusterDNS: []string{"10.0.100.10"},
	}
	winWant := Config{
		Family: "Windows2022", ClusterName: "test-cluster", APIServerEndpoint: "https://test-cluster", CABundle: ca,
		Labels:  map[string]string{"karpenter.sh/capacity-type": "spot", "kubernetes.io/os": "windows"},
		Taints:  []corev1.Taint{unregistered()},
		MaxPods: ptr.To[int32](110), ClusterDNS: []string{"10.0.100.10"},
	}
	detected := func(c Config, family string) Config {
		c.Family = family
		return c
	}
	cases := map[string]struct {
		userData string
		family   string
		want     Config
	}{
		"AL2023 MIME, NodeConfigs merged in order": {userData: al2023MIME, family: "AL2023", want: al2023Want},
		"AL2023 MIME detected":                     {userData: al2023MIME, want: al2023Want},
		"AL2023 plain NodeConfig, flags over config": {
			userData: al2023YAML, family: "AL2023",
			want: Config{
				Family: "AL2023", ClusterName: "my-cluster", APIServerEndpoint: "https://example.com", CABundle: ca,
				Labels:  map[string]string{"a": "b"},
				Taints:  []corev1.Taint{{Key: "x", Value: "y", Effect: corev1.TaintEffectPreferNoSchedule}},
				MaxPods: ptr.To[int32](20),
			},
		},
		"AL2023 plain NodeConfig detected": {userData: al2023YAML, family: "Custom", want: Config{
			Family: "AL2023", ClusterName: "my-cluster", APIServerEndpoint: "https://example.com", CABundle: ca,
			Labels: map[string]string{"a": "b"}, Taints: []corev1.Taint{{Key: "x", Value: "y", Effect: corev1.TaintEffectPreferNoSchedule}},
			MaxPods: ptr.To[int32](20),
		}},
		"AL2 MIME":          {userData: al2MIME, family: "AL2", want: al2Want},
		"AL2 MIME detected": {userData: al2MIME, want: al2Want},
		"AL2 custom script": {userData: al2Custom, family: "Custom", want: Config{
			Family: "AL2", ClusterName: "my-cluster", CABundle: ca,
			Labels: map[string]string{"role": "worker"}, Taints: []corev1.Taint{unregistered()}, MaxPods: ptr.To[int32](20),
		}},
		"Bottlerocket":          {userData: bottlerocketTOML, family: "Bottlerocket", want: brWant},
		"Bottlerocket detected": {userData: bottlerocketTOML, want: brWant},
		"Bottlerocket DNS list": {
			userData: strings.Replace(bottlerocketTOML, "cluster-dns-ip = '10.0.100.10'", "cluster-dns-ip = ['10.0.100.10', '10.0.100.11']", 1),
			family:   "Bottlerocket",
			want: func() Config {
				c := brWant
				c.ClusterDNS = []string{"10.0.100.10", "10.0.100.11"}
				return c
			}(),
		},
		"Windows":          {userData: windowsPS, family: "Windows2022", want: winWant},
		"Windows detected": {userData: windowsPS, want: detected(winWant, "Windows")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Parse([]byte(tc.userData), tc.family)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := map[string]struct {
		userData string
		family   string
		wantErr  []string
	}{
		"empty":          {userData: "  \n", wantErr: []string{"empty"}},
		"garbage":        {userData: "hello world", wantErr: []string{"none of"}},
		"unknown family": {userData: al2MIME, family: "Ubuntu", wantErr: []string{`unknown AMI family "Ubuntu"`}},
		"MIME broken boundary": {
			userData: strings.Replace(al2MIME, `boundary="//"`, `boundary="xx"`, 1), family: "AL2",
			wantErr: []string{"parsing AL2 user data", `no parts with boundary "xx"`},
		},
		"MIME without closing boundary": {
			userData: strings.TrimSuffix(al2023MIME, "--//--\r\n"), family: "AL2023",
			wantErr: []string{"reading MIME part 3"},
		},
		"AL2023 NodeConfig of wrong kind": {
			userData: strings.Replace(al2023YAML, "kind: NodeConfig", "kind: KubeletConfiguration", 1), family: "AL2023",
			wantErr: []string{`kind "KubeletConfiguration"`},
		},
		"AL2023 without CIDR": {
			userData: strings.Replace(al2023YAML, "    cidr: 10.100.0.0/16\n", "", 1), family: "AL2023",
			wantErr: []string{"spec.cluster.cidr"},
		},
		"AL2023 bad CA": {
			userData: strings.Replace(al2023YAML, ca, "not-base64!", 1), family: "AL2023",
			wantErr: []string{"certificateAuthority"},
		},
		"AL2023 MIME without NodeConfig": {userData: al2MIME, family: "AL2023", wantErr: []string{"no application/node.eks.aws"}},
		"AL2023 bad max pods flag": {
			userData: strings.Replace(al2023YAML, "--max-pods=20", "--max-pods=lots", 1), family: "AL2023",
			wantErr: []string{"--max-pods"},
		},
		"AL2 no bootstrap": {userData: "#!/bin/bash\necho hi\n", family: "AL2", wantErr: []string{"no /etc/eks/bootstrap.sh command"}},
		"AL2 unterminated quote": {
			userData: "#!/bin/bash\n/etc/eks/bootstrap.sh c --kubelet-extra-args '--max-pods=1\n", family: "AL2",
			wantErr: []string{"unterminated single quote"},
		},
		"AL2 no cluster name": {userData: "/etc/eks/bootstrap.sh --apiserver-endpoint x\n", family: "AL2", wantErr: []string{"no cluster name"}},
		"AL2 bad taint effect": {
			userData: "/etc/eks/bootstrap.sh c --kubelet-extra-args '--register-with-taints=a=b:Never'\n", family: "AL2",
			wantErr: []string{`unknown effect "Never"`},
		},
		"AL2 bad label": {
			userData: "/etc/eks/bootstrap.sh c --kubelet-extra-args '--node-labels=novalue'\n", family: "AL2",
			wantErr: []string{`label "novalue" is not key=value`},
		},
		"Bottlerocket malformed": {userData: "[settings.kubernetes\n", family: "Bottlerocket", wantErr: []string{"parsing TOML"}},
		"Bottlerocket no cluster name": {
			userData: "[settings.kubernetes]\napi-server = 'x'\n", family: "Bottlerocket",
			wantErr: []string{"cluster-name and api-server"},
		},
		"Bottlerocket bad taint": {
			userData: strings.Replace(bottlerocketTOML, "['bin:NoExecute']", "['bin']", 1), family: "Bottlerocket",
			wantErr: []string{`"bin" is not value:Effect`},
		},
		"Windows without block": {userData: "Write-Host hi", family: "Windows2019", wantErr: []string{"<powershell>"}},
		"Windows without bootstrap": {
			userData: "<powershell>\nWrite-Host hi\n</powershell>", family: "Windows2019",
			wantErr: []string{"-EKSClusterName"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.userData), tc.family)
			if err == nil {
				t.Fatalf("got no error, want one containing %q", tc.wantErr)
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestShellWords(t *testing.T) {
	cases := map[string]struct {
		in   string
		want [][]string
	}{
		"quotes":       {in: `a 'b c' "d \"e\"" f\ g ''`, want: [][]string{{"a", "b c", `d "e"`, "f g", ""}}},
		"continuation": {in: "a \\\n b\nc # comment\n#x\nd;e", want: [][]string{{"a", "b"}, {"c"}, {"d"}, {"e"}}},
		"nested":       {in: `x '--node-labels="a=b,c=d" --max-pods=3'`, want: [][]string{{"x", `--node-labels="a=b,c=d" --max-pods=3`}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := shellCommands(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	got, err := powershellWords(`& $F -A 'it''s' -B "x ""y"" ` + "`\"z\"")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"&", "$F", "-A", "it's", "-B", `x "y" "z`}, got); diff != "" {
		t.Errorf("powershellWords (-want +got):\n%s", diff)
	}
}
