package chart_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// helm runs the pinned Helm against the control plane and returns its
// standard output; an error carries its standard error.
func helm(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, helmBin, append(args, "--kubeconfig", cp.KubeconfigPath)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// chartDir is the path of a chart in the repository.
func chartDir(name string) string { return filepath.Join(repoRoot, "charts", name) }

// waitCRDsServed waits until discovery serves the NodePool and NodeClaim
// resources the charts' CRDs define.
func waitCRDsServed(ctx context.Context) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		list, err := clientset.Discovery().ServerResourcesForGroupVersion("karpenter.sh/v1")
		if err != nil {
			return false, nil
		}
		found := map[string]bool{}
		for _, r := range list.APIResources {
			found[r.Name] = true
		}
		return found["nodepools"] && found["nodeclaims"], nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the CRDs to be served: %w", err)
	}
	return nil
}

// manifestObjects decodes a multi-document manifest.
func manifestObjects(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	decoder := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := decoder.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decoding the manifest: %v", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// TestChartObjectsAccepted: every object of both releases exists in the API
// server (Helm created it, admission accepted it), and the release is
// deployed.
func TestChartObjectsAccepted(t *testing.T) {
	ctx := context.Background()
	kinds := map[string]int{}
	for _, release := range []string{releaseName + "-crd", releaseName} {
		status, err := helm(ctx, "status", release, "--namespace", releaseNS, "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(status, `"status":"deployed"`) {
			t.Errorf("release %s is not deployed: %s", release, status)
		}
		manifest, err := helm(ctx, "get", "manifest", release, "--namespace", releaseNS)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range manifestObjects(t, manifest) {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(want.GroupVersionKind())
			key := client.ObjectKey{Namespace: want.GetNamespace(), Name: want.GetName()}
			if err := kube.Get(ctx, key, got); err != nil {
				t.Errorf("%s %s from release %s: %v", want.GetKind(), key, release, err)
				continue
			}
			kinds[want.GetKind()]++
		}
	}
	for _, kind := range []string{"CustomResourceDefinition", "Deployment", "ServiceAccount", "Service", "PodDisruptionBudget", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s in the releases (found %v)", kind, kinds)
		}
	}
	t.Logf("objects accepted: %v", kinds)
}

// TestHelmLint: both charts lint clean in strict mode, for both providers.
func TestHelmLint(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{chartDir("dovetail-crd")},
		{chartDir("dovetail"), "--set", "settings.clusterName=lint"},
		{chartDir("dovetail"), "--set", "cloudProvider=kwok"},
		{chartDir("dovetail"), "--set", "settings.clusterName=lint", "--set", "webhook.enabled=false", "--set", "serviceMonitor.enabled=true", "--set", "dashboards.enabled=true"},
	} {
		if out, err := helm(ctx, append([]string{"lint", "--strict"}, args...)...); err != nil {
			t.Errorf("%v\n%s", err, out)
		}
	}
}

// TestBadValuesFailNamingTheKey: a misspelt or mistyped value, or a missing
// setting the provider needs, fails the install before anything reaches
// the cluster, with a message naming the key.
func TestBadValuesFailNamingTheKey(t *testing.T) {
	cases := map[string]struct {
		chart string
		set   []string
		want  []string
	}{
		"misspelt top-level key":        {chart: "dovetail", set: []string{"cloudProvider=kwok", "replica=3"}, want: []string{"replica"}},
		"misspelt setting":              {chart: "dovetail", set: []string{"cloudProvider=kwok", "settings.clustername=x"}, want: []string{"clustername"}},
		"mistyped replicas":             {chart: "dovetail", set: []string{"cloudProvider=kwok", "replicas=two"}, want: []string{"replicas"}},
		"mistyped feature gate":         {chart: "dovetail", set: []string{"cloudProvider=kwok", "settings.featureGates.spotToSpotConsolidation=yes"}, want: []string{"spotToSpotConsolidation"}},
		"mistyped Dovetail gate":        {chart: "dovetail", set: []string{"cloudProvider=kwok", "settings.featureGates.earlyProvisioning=soon"}, want: []string{"earlyProvisioning"}},
		"mistyped consolidation gate":   {chart: "dovetail", set: []string{"cloudProvider=kwok", "settings.featureGates.multiNodeReplacements=yes"}, want: []string{"multiNodeReplacements"}},
		"mistyped candidate-taint gate": {chart: "dovetail", set: []string{"cloudProvider=kwok", "settings.featureGates.consolidationCandidateTaint=off"}, want: []string{"consolidationCandidateTaint"}},
		"gate Dovetail lacks":           {chart: "dovetail", set: []string{"cloudProvider=kwok", "settings.featureGates.reservedCapacity=true"}, want: []string{"reservedCapacity"}},
		"unknown provider":              {chart: "dovetail", set: []string{"cloudProvider=gce"}, want: []string{"cloudProvider"}},
		"bad duration":                  {chart: "dovetail", set: []string{"cloudProvider=kwok", "settings.batchMaxDuration=10 seconds"}, want: []string{"batchMaxDuration"}},
		"bad log level":                 {chart: "dovetail", set: []string{"cloudProvider=kwok", "logLevel=verbose"}, want: []string{"logLevel"}},
		"port out of range":             {chart: "dovetail", set: []string{"cloudProvider=kwok", "controller.metrics.port=70000"}, want: []string{"port"}},
		"aws without clusterName":       {chart: "dovetail", set: []string{"cloudProvider=aws"}, want: []string{"settings.clusterName"}},
		"misspelt crd chart key":        {chart: "dovetail-crd", set: []string{"webhook.enable=false"}, want: []string{"enable"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			args := []string{"template", "bad", chartDir(tc.chart)}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			out, err := helm(context.Background(), args...)
			if err == nil {
				t.Fatalf("helm template succeeded, want an error naming %v:\n%.300s", tc.want, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q: %v", w, err)
				}
			}
		})
	}
}

// TestCRDChartWiresTheWebhook: the multi-version CRDs name the controller
// chart's Service as their conversion webhook, the kwok one does not.
func TestCRDChartWiresTheWebhook(t *testing.T) {
	ctx := context.Background()
	gvk := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	for name, want := range map[string]string{
		"nodepools.karpenter.sh": "Webhook", "nodeclaims.karpenter.sh": "Webhook",
		"ec2nodeclasses.karpenter.k8s.aws": "Webhook", "kwoknodeclasses.karpenter.kwok.sh": "None",
	} {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(gvk)
		if err := kube.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
			if apierrors.IsNotFound(err) {
				t.Errorf("CRD %s not installed", name)
				continue
			}
			t.Fatal(err)
		}
		strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
		if strategy != want {
			t.Errorf("CRD %s conversion strategy %q, want %q", name, strategy, want)
		}
		if want == "Webhook" {
			svc, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "name")
			ns, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "service", "namespace")
			if svc != releaseName || ns != releaseNS {
				t.Errorf("CRD %s converts through service %s/%s, want %s/%s", name, ns, svc, releaseNS, releaseName)
			}
		}
	}
}

// TestOptionalObjectsRender: the ServiceMonitor renders only when enabled and
// the cluster serves monitoring.coreos.com/v1, the dashboards only when
// enabled, and an IRSA annotation lands on the ServiceAccount.
func TestOptionalObjectsRender(t *testing.T) {
	render := func(args ...string) (map[string]int, []*unstructured.Unstructured) {
		t.Helper()
		out, err := helm(context.Background(), append([]string{"template", "x", chartDir("dovetail"), "--set", "cloudProvider=kwok"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		objs := manifestObjects(t, out)
		kinds := map[string]int{}
		for _, obj := range objs {
			kinds[obj.GetKind()]++
		}
		return kinds, objs
	}
	if k, _ := render(); k["ServiceMonitor"] != 0 || k["ConfigMap"] != 0 {
		t.Errorf("defaults render optional objects: %v", k)
	}
	if k, _ := render("--set", "serviceMonitor.enabled=true"); k["ServiceMonitor"] != 0 {
		t.Errorf("a ServiceMonitor without the monitoring.coreos.com/v1 API: %v", k)
	}
	if k, _ := render("--set", "serviceMonitor.enabled=true", "--api-versions", "monitoring.coreos.com/v1"); k["ServiceMonitor"] != 1 {
		t.Errorf("no ServiceMonitor with the API served: %v", k)
	}
	if k, _ := render("--set", "dashboards.enabled=true"); k["ConfigMap"] != 2 {
		t.Errorf("want 2 dashboard ConfigMaps: %v", k)
	}
	for set, want := range map[string]string{
		"":                                       "SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=true,EarlyProvisioning=true,MultiNodeReplacements=false,ConsolidationCandidateTaint=true",
		"settings.featureGates.nodeRepair=false": "SpotToSpotConsolidation=false,NodeRepair=false,NodeOverlay=true,EarlyProvisioning=true,MultiNodeReplacements=false,ConsolidationCandidateTaint=true",
		"settings.featureGates.nodeOverlay=false":                 "SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=false,EarlyProvisioning=true,MultiNodeReplacements=false,ConsolidationCandidateTaint=true",
		"settings.featureGates.earlyProvisioning=false":           "SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=true,EarlyProvisioning=false,MultiNodeReplacements=false,ConsolidationCandidateTaint=true",
		"settings.featureGates.multiNodeReplacements=true":        "SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=true,EarlyProvisioning=true,MultiNodeReplacements=true,ConsolidationCandidateTaint=true",
		"settings.featureGates.consolidationCandidateTaint=false": "SpotToSpotConsolidation=false,NodeRepair=true,NodeOverlay=true,EarlyProvisioning=true,MultiNodeReplacements=false,ConsolidationCandidateTaint=false",
	} {
		args := []string{}
		if set != "" {
			args = []string{"--set", set}
		}
		_, objs := render(args...)
		if got := deploymentEnv(t, objs, "FEATURE_GATES"); got != want {
			t.Errorf("--set %q: FEATURE_GATES %q, want %q", set, got, want)
		}
	}
	const arn = "arn:aws:iam::111122223333:role/DovetailController-c1"
	_, objs := render("--set", `serviceAccount.annotations.eks\.amazonaws\.com/role-arn=`+arn)
	for _, obj := range objs {
		if obj.GetKind() == "ServiceAccount" {
			if got := obj.GetAnnotations()["eks.amazonaws.com/role-arn"]; got != arn {
				t.Errorf("ServiceAccount role-arn annotation %q, want %q", got, arn)
			}
		}
	}
}

// deploymentEnv returns the value of the controller container's environment
// variable in the rendered Deployment.
func deploymentEnv(t *testing.T, objs []*unstructured.Unstructured, name string) string {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range containers {
			env, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
			for _, e := range env {
				if e.(map[string]any)["name"] == name {
					v, _ := e.(map[string]any)["value"].(string)
					return v
				}
			}
		}
	}
	t.Fatalf("no %s in the rendered Deployment", name)
	return ""
}
