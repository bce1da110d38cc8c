package userdata

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	karpv1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
)

func TestValidate(t *testing.T) {
	mime := func(declared, used, closing string) string {
		return "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"" + declared + "\"\n\n" +
			"--" + used + "\nContent-Type: text/x-shellscript\n\necho hi\n" + closing
	}
	cases := map[string]struct {
		family   string
		userData string
		// wantErr lists substrings of the error; nil means no error.
		wantErr     []string
		wantInvalid bool
	}{
		"AL2 empty":                    {family: awsv1.AMIFamilyAL2},
		"AL2 shell":                    {family: awsv1.AMIFamilyAL2, userData: shellUserData},
		"AL2 MIME":                     {family: awsv1.AMIFamilyAL2, userData: mimeUserData},
		"AL2 MIME any boundary":        {family: awsv1.AMIFamilyAL2, userData: mime("xyz", "xyz", "--xyz--\n")},
		"AL2 MIME no closing boundary": {family: awsv1.AMIFamilyAL2, userData: mime("xyz", "xyz", ""), wantErr: []string{"spec.userData", "AL2", "part 1", `boundary "xyz"`}, wantInvalid: true},
		"AL2 MIME broken boundary": {
			family: awsv1.AMIFamilyAL2, userData: mime("abc", "xyz", "--xyz--\n"),
			wantErr: []string{"spec.userData", `no parts delimited by its boundary "abc"`}, wantInvalid: true,
		},
		"AL2 MIME without boundary": {
			family: awsv1.AMIFamilyAL2, userData: "MIME-Version: 1.0\nContent-Type: multipart/mixed\n\n--x\n\necho\n--x--\n",
			wantErr: []string{"spec.userData", "has no boundary"}, wantInvalid: true,
		},
		"AL2 MIME not multipart": {
			family: awsv1.AMIFamilyAL2, userData: "Content-Type: text/plain\n\necho\n",
			wantErr: []string{"spec.userData", `"text/plain", want multipart/mixed`}, wantInvalid: true,
		},
		"AL2023 shell":      {family: awsv1.AMIFamilyAL2023, userData: shellUserData},
		"AL2023 NodeConfig": {family: awsv1.AMIFamilyAL2023, userData: nodeConfigUserData},
		"AL2023 MIME":       {family: awsv1.AMIFamilyAL2023, userData: mimeUserData},
		"AL2023 wrong kind": {
			family: awsv1.AMIFamilyAL2023, userData: "apiVersion: v1\nkind: ConfigMap\ndata: {}\n",
			wantErr: []string{"spec.userData", "AL2023", `apiVersion "v1" and kind "ConfigMap"`, "node.eks.aws/v1alpha1"}, wantInvalid: true,
		},
		"AL2023 missing kind": {
			family: awsv1.AMIFamilyAL2023, userData: "spec:\n  cluster:\n    name: x\n",
			wantErr: []string{"spec.userData", `kind ""`}, wantInvalid: true,
		},
		"AL2023 MIME part with wrong apiVersion": {
			family:   awsv1.AMIFamilyAL2023,
			userData: strings.Replace(mimeUserData, "node.eks.aws/v1alpha1", "node.eks.aws/v9", 1),
			wantErr:  []string{"spec.userData", "part 2", `"node.eks.aws/v9"`}, wantInvalid: true,
		},
		"AL2023 NodeConfig with wrong field type": {
			family: awsv1.AMIFamilyAL2023, userData: "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: --v=4\n",
			wantErr: []string{"spec.userData", "parsing NodeConfig YAML"}, wantInvalid: true,
		},
		"Bottlerocket":                {family: awsv1.AMIFamilyBottlerocket, userData: bottlerocketUserData},
		"Bottlerocket malformed TOML": {family: awsv1.AMIFamilyBottlerocket, userData: "[settings.kubernetes\nmax-pods = 1\n", wantErr: []string{"spec.userData", "Bottlerocket", "parsing TOML"}, wantInvalid: true},
		"Bottlerocket wrong type": {
			family: awsv1.AMIFamilyBottlerocket, userData: "[settings.kubernetes]\nmax-pods = \"many\"\n",
			wantErr: []string{"spec.userData", "settings.kubernetes"}, wantInvalid: true,
		},
		"Bottlerocket settings not a table": {family: awsv1.AMIFamilyBottlerocket, userData: "settings = 3\n", wantErr: []string{"spec.userData", "parsing TOML"}, wantInvalid: true},
		"Windows":                           {family: awsv1.AMIFamilyWindows2022, userData: windowsUserData},
		"Windows with tags": {
			family: awsv1.AMIFamilyWindows2019, userData: "<powershell>\nWrite-Host hi\n</powershell>",
			wantErr: []string{"spec.userData", "Windows2019", "<powershell> tags"}, wantInvalid: true,
		},
		"Custom anything": {family: awsv1.AMIFamilyCustom, userData: "[[[ not anything"},
		"too large": {
			family: awsv1.AMIFamilyCustom, userData: strings.Repeat("x", MaxSize+1),
			wantErr: []string{"spec.userData", "16385 bytes", "limit is 16384 bytes"},
		},
		"unknown family": {family: "Ubuntu", userData: "x", wantErr: []string{"spec.userData", `"Ubuntu"`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Validate(tc.family, tc.userData)
			checkErr(t, err, tc.wantErr)
			if diff := cmp.Diff(tc.wantInvalid, IsInvalidUserData(err)); diff != "" {
				t.Errorf("IsInvalidUserData (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	cases := map[string]struct {
		opts    Options
		wantErr []string
	}{
		"unknown family": {opts: baseOptions("Ubuntu"), wantErr: []string{`unknown AMI family "Ubuntu"`}},
		"AL2023 without service CIDR": {
			opts:    with(baseOptions(awsv1.AMIFamilyAL2023), func(o *Options) { o.ClusterCIDR = "" }),
			wantErr: []string{"rendering AL2023 user data", "service CIDR"},
		},
		"AL2023 bad CA": {
			opts:    with(baseOptions(awsv1.AMIFamilyAL2023), func(o *Options) { o.CABundle = "not base64!" }),
			wantErr: []string{"decoding the cluster CA bundle"},
		},
		"AL2023 wrong kind": {
			opts:    with(baseOptions(awsv1.AMIFamilyAL2023), func(o *Options) { o.CustomUserData = ptr.To("apiVersion: v1\nkind: Pod\n") }),
			wantErr: []string{"spec.userData", `kind "Pod"`},
		},
		"Bottlerocket malformed": {
			opts:    with(baseOptions(awsv1.AMIFamilyBottlerocket), func(o *Options) { o.CustomUserData = ptr.To("[settings") }),
			wantErr: []string{"spec.userData", "parsing TOML"},
		},
		"too large after merge": {
			opts: with(baseOptions(awsv1.AMIFamilyAL2), func(o *Options) {
				o.CustomUserData = ptr.To("#!/bin/bash\n" + strings.Repeat("#", MaxSize-100))
			}),
			wantErr: []string{"rendering AL2 user data", "limit is 16384 bytes"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Render(tc.opts)
			checkErr(t, err, tc.wantErr)
		})
	}
	_, err := Render(goldenCases()["AL2_default"])
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	big := with(baseOptions(awsv1.AMIFamilyCustom), func(o *Options) { o.CustomUserData = ptr.To(strings.Repeat("x", MaxSize+1)) })
	if _, err := Render(big); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Render of %d bytes: got %v, want ErrTooLarge", MaxSize+1, err)
	}
}

func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got no error, want one containing %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}

func TestLabelsAndTaints(t *testing.T) {
	o := baseOptions(awsv1.AMIFamilyAL2)
	o.Taints = append(o.Taints, karpv1.UnregisteredNoExecuteTaint())
	want := map[string]string{
		"example.com/owner":               "b",
		"karpenter.k8s.aws/ec2nodeclass":  "default",
		"karpenter.sh/capacity-type":      "on-demand",
		"karpenter.sh/do-not-sync-taints": "true",
		"karpenter.sh/nodepool":           "default",
		"team":                            "a",
	}
	if diff := cmp.Diff(want, o.nodeLabels()); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got := len(o.taints()); got != 2 {
		t.Errorf("unregistered taint was appended although present: %d taints", got)
	}
}

func TestBottlerocketVersion(t *testing.T) {
	cases := map[string]struct {
		in        string
		want      string
		newerBind bool
	}{
		"alias latest":   {in: "latest", want: "latest", newerBind: true},
		"alias version":  {in: "v1.20.3", want: "1.20.3"},
		"bare version":   {in: "1.46.0", want: "1.46.0", newerBind: true},
		"AMI name":       {in: "bottlerocket-aws-k8s-1.33-x86_64-v1.46.0-431fe75a", want: "1.46.0", newerBind: true},
		"AMI name newer": {in: "bottlerocket-aws-k8s-1.34-aarch64-v1.50.2-abc", want: "1.50.2", newerBind: true},
		"name term glob": {in: "bottlerocket-aws-k8s-*", want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := BottlerocketVersion(tc.in)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("BottlerocketVersion (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.newerBind, len(brBindCommand(got)) == 3); diff != "" {
				t.Errorf("plain bind command (-want +got):\n%s", diff)
			}
		})
	}
}
