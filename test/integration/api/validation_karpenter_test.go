package api_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const baseNodePool = `
apiVersion: karpenter.sh/v1
kind: NodePool
metadata:
  name: base
spec:
  template:
    metadata:
      labels:
        team: checkout
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
      taints:
      - {key: example.com/special, effect: NoSchedule}
      startupTaints:
      - {key: example.com/startup, effect: NoSchedule}
  disruption:
    budgets:
    - nodes: "10%"
`

const baseNodeClaim = `
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: base
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
  resources:
    requests: {cpu: "1", memory: 1Gi}
`

// invalidCase is an object the API server must reject, and the field path and
// message fragment the error must contain.
type invalidCase struct {
	base      string
	mutations []mutation
	wantField string
	wantMsg   string
}

// runInvalidCases dry-run-creates each mutated object and checks the error.
func runInvalidCases(t *testing.T, cases map[string]invalidCase) {
	t.Helper()
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := object(t, tc.base)
			obj.SetName(uniqueName(t, "invalid"))
			for _, m := range tc.mutations {
				m(t, obj.Object)
			}
			err := dryRunCreate(obj)
			if err == nil {
				t.Fatalf("object was accepted; want an error on %s", tc.wantField)
			}
			if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) {
				t.Fatalf("error is not Invalid/BadRequest: %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error does not name field %q:\n%v", tc.wantField, err)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error does not say %q:\n%v", tc.wantMsg, err)
			}
		})
	}
}

// TestBaseObjectsAreValid guards the invalid-case tables: their bases must pass.
func TestBaseObjectsAreValid(t *testing.T) {
	for name, base := range map[string]string{"NodePool": baseNodePool, "NodeClaim": baseNodeClaim, "EC2NodeClass": baseEC2NodeClass, "KWOKNodeClass": baseKWOKNodeClass, "NodePool v1beta1": baseNodePoolV1beta1} {
		t.Run(name, func(t *testing.T) {
			obj := object(t, base)
			obj.SetName(uniqueName(t, "valid"))
			if err := dryRunCreate(obj); err != nil {
				t.Fatalf("base object rejected: %v", err)
			}
		})
	}
}

// TestRestrictionsStayOnNodePools checks what the NodePool-only rules must
// not reject: a NodeClaim made by the provisioner requires its own
// karpenter.sh/nodepool, and template labels may have any valid value,
// including the empty one.
func TestRestrictionsStayOnNodePools(t *testing.T) {
	claim := object(t, baseNodeClaim)
	claim.SetName(uniqueName(t, "claim"))
	requirements, _, _ := unstructured.NestedSlice(claim.Object, "spec", "requirements")
	requirements = append(requirements, map[string]any{"key": "karpenter.sh/nodepool", "operator": "In", "values": []any{"default"}})
	if err := unstructured.SetNestedSlice(claim.Object, requirements, "spec", "requirements"); err != nil {
		t.Fatal(err)
	}
	if err := dryRunCreate(claim); err != nil {
		t.Errorf("NodeClaim requiring karpenter.sh/nodepool rejected: %v", err)
	}
	pool := object(t, baseNodePool)
	pool.SetName(uniqueName(t, "labels"))
	labels := map[string]any{"team": "", "tier": "a.b-c_D9", "long": strings.Repeat("a", 63)}
	if err := unstructured.SetNestedMap(pool.Object, labels, "spec", "template", "metadata", "labels"); err != nil {
		t.Fatal(err)
	}
	if err := dryRunCreate(pool); err != nil {
		t.Errorf("NodePool with valid label values rejected: %v", err)
	}
}

func TestInvalidNodePools(t *testing.T) {
	const tmpl = "spec.template.spec."
	const req0 = tmpl + "requirements[0]"
	runInvalidCases(t, map[string]invalidCase{
		"missing nodeClassRef":             {baseNodePool, []mutation{del(tmpl + "nodeClassRef")}, tmpl + "nodeClassRef", "Required value"},
		"missing nodeClassRef group":       {baseNodePool, []mutation{del(tmpl + "nodeClassRef.group")}, tmpl + "nodeClassRef.group", "Required value"},
		"missing nodeClassRef kind":        {baseNodePool, []mutation{del(tmpl + "nodeClassRef.kind")}, tmpl + "nodeClassRef.kind", "Required value"},
		"missing nodeClassRef name":        {baseNodePool, []mutation{del(tmpl + "nodeClassRef.name")}, tmpl + "nodeClassRef.name", "Required value"},
		"empty nodeClassRef name":          {baseNodePool, []mutation{set(tmpl+"nodeClassRef.name", "")}, tmpl + "nodeClassRef.name", "name may not be empty"},
		"nodeClassRef group with a path":   {baseNodePool, []mutation{set(tmpl+"nodeClassRef.group", "karpenter.k8s.aws/v1/x")}, tmpl + "nodeClassRef.group", "should match"},
		"budget nodes negative":            {baseNodePool, []mutation{set("spec.disruption.budgets[0].nodes", -1)}, "spec.disruption.budgets[0].nodes", "nodes must not be negative"},
		"missing requirements":             {baseNodePool, []mutation{del(tmpl + "requirements")}, tmpl + "requirements", "Required value"},
		"unknown operator":                 {baseNodePool, []mutation{set(req0+".operator", "Like")}, req0 + ".operator", "Unsupported value"},
		"In without values":                {baseNodePool, []mutation{del(req0 + ".values")}, req0, "operator 'In' must have a value defined"},
		"In with empty values":             {baseNodePool, []mutation{set(req0+".values", []any{})}, req0, "operator 'In' must have a value defined"},
		"NotIn without values":             {baseNodePool, []mutation{set(req0+".operator", "NotIn"), del(req0 + ".values")}, req0, "operator 'NotIn' must have a value defined"},
		"Gt with two values":               {baseNodePool, []mutation{set(req0+".key", "karpenter.k8s.aws/instance-generation"), set(req0+".operator", "Gt"), set(req0+".values", []any{"2", "3"})}, req0, "single positive integer"},
		"Gt with a word":                   {baseNodePool, []mutation{set(req0+".key", "karpenter.k8s.aws/instance-generation"), set(req0+".operator", "Gt"), set(req0+".values", []any{"two"})}, req0, "single positive integer"},
		"Lt without values":                {baseNodePool, []mutation{set(req0+".operator", "Lt"), del(req0 + ".values")}, req0, "single positive integer"},
		"Gte with a negative value":        {baseNodePool, []mutation{set(req0+".operator", "Gte"), set(req0+".values", []any{"-1"})}, req0, "single positive integer"},
		"Lte with a decimal":               {baseNodePool, []mutation{set(req0+".operator", "Lte"), set(req0+".values", []any{"1.5"})}, req0, "single positive integer"},
		"Exists with values":               {baseNodePool, []mutation{set(req0+".operator", "Exists")}, req0, "must not have values"},
		"DoesNotExist with values":         {baseNodePool, []mutation{set(req0+".operator", "DoesNotExist")}, req0, "must not have values"},
		"minValues zero":                   {baseNodePool, []mutation{set(req0+".minValues", 0)}, req0 + ".minValues", "greater than or equal to 1"},
		"minValues above 50":               {baseNodePool, []mutation{set(req0+".minValues", 51)}, req0 + ".minValues", "less than or equal to 50"},
		"minValues above value count":      {baseNodePool, []mutation{set(req0+".minValues", 3)}, req0, "must have at least that many values"},
		"hostname requirement":             {baseNodePool, []mutation{set(req0+".key", "kubernetes.io/hostname")}, req0 + ".key", `label "kubernetes.io/hostname" is restricted`},
		"kubernetes.io requirement":        {baseNodePool, []mutation{set(req0+".key", "kubernetes.io/custom")}, req0 + ".key", `label domain "kubernetes.io" is restricted`},
		"k8s.io requirement":               {baseNodePool, []mutation{set(req0+".key", "example.k8s.io/custom")}, req0 + ".key", `label domain "k8s.io" is restricted`},
		"karpenter.sh requirement":         {baseNodePool, []mutation{set(req0+".key", "karpenter.sh/custom")}, req0 + ".key", `label domain "karpenter.sh" is restricted`},
		"karpenter.k8s.aws requirement":    {baseNodePool, []mutation{set(req0+".key", "karpenter.k8s.aws/custom")}, req0 + ".key", `label domain "karpenter.k8s.aws" is restricted`},
		"requirement key with spaces":      {baseNodePool, []mutation{set(req0+".key", "bad key")}, req0 + ".key", "should match"},
		"requirement value too long":       {baseNodePool, []mutation{set(req0+".values", []any{strings.Repeat("a", 64)})}, req0 + ".values[0]", "Too long"},
		"requirement value with spaces":    {baseNodePool, []mutation{set(req0+".values", []any{"a b"})}, req0 + ".values[0]", "should match"},
		"taint with unknown effect":        {baseNodePool, []mutation{set(tmpl+"taints[0].effect", "NoWay")}, tmpl + "taints", "taint effect must be one of"},
		"startup taint with bad effect":    {baseNodePool, []mutation{set(tmpl+"startupTaints[0].effect", "Sometimes")}, tmpl + "startupTaints", "taint effect must be one of"},
		"nodepool label":                   {baseNodePool, []mutation{set("spec.template.metadata.labels", map[string]any{"karpenter.sh/nodepool": "x"})}, "spec.template.metadata.labels", `label "karpenter.sh/nodepool" is restricted`},
		"hostname label":                   {baseNodePool, []mutation{set("spec.template.metadata.labels", map[string]any{"kubernetes.io/hostname": "x"})}, "spec.template.metadata.labels", `label "kubernetes.io/hostname" is restricted`},
		"kubernetes.io label":              {baseNodePool, []mutation{set("spec.template.metadata.labels", map[string]any{"kubernetes.io/team": "x"})}, "spec.template.metadata.labels", `label domain "kubernetes.io" is restricted`},
		"karpenter.sh label":               {baseNodePool, []mutation{set("spec.template.metadata.labels", map[string]any{"karpenter.sh/team": "x"})}, "spec.template.metadata.labels", `label domain "karpenter.sh" is restricted`},
		"nodepool requirement":             {baseNodePool, []mutation{set(req0+".key", "karpenter.sh/nodepool")}, req0 + ".key", `label "karpenter.sh/nodepool" is restricted`},
		"label value too long":             {baseNodePool, []mutation{set("spec.template.metadata.labels", map[string]any{"team": strings.Repeat("a", 64)})}, "spec.template.metadata.labels.team", "Too long"},
		"label value with spaces":          {baseNodePool, []mutation{set("spec.template.metadata.labels", map[string]any{"team": "a b"})}, "spec.template.metadata.labels.team", "should match"},
		"label value ending in a dash":     {baseNodePool, []mutation{set("spec.template.metadata.labels", map[string]any{"team": "a-"})}, "spec.template.metadata.labels.team", "should match"},
		"label key with spaces":            {baseNodePool, []mutation{set("spec.template.metadata.labels", map[string]any{"my team": "x"})}, "spec.template.metadata.labels", "label keys must be qualified names"},
		"weight zero":                      {baseNodePool, []mutation{set("spec.weight", 0)}, "spec.weight", "greater than or equal to 1"},
		"weight above 100":                 {baseNodePool, []mutation{set("spec.weight", 101)}, "spec.weight", "less than or equal to 100"},
		"limit not a quantity":             {baseNodePool, []mutation{set("spec.limits", map[string]any{"cpu": "lots"})}, "spec.limits.cpu", "should match"},
		"budget nodes a word":              {baseNodePool, []mutation{set("spec.disruption.budgets[0].nodes", "some")}, "spec.disruption.budgets[0].nodes", "should match"},
		"budget nodes over 100%":           {baseNodePool, []mutation{set("spec.disruption.budgets[0].nodes", "101%")}, "spec.disruption.budgets[0].nodes", "should match"},
		"budget schedule without duration": {baseNodePool, []mutation{set("spec.disruption.budgets[0].schedule", "@daily")}, "spec.disruption.budgets", "'schedule' must be set with 'duration'"},
		"budget duration without schedule": {baseNodePool, []mutation{set("spec.disruption.budgets[0].duration", "1h")}, "spec.disruption.budgets", "'schedule' must be set with 'duration'"},
		"budget schedule not cron":         {baseNodePool, []mutation{set("spec.disruption.budgets[0].schedule", "every day"), set("spec.disruption.budgets[0].duration", "1h")}, "spec.disruption.budgets[0].schedule", "should match"},
		"budget schedule six fields":       {baseNodePool, []mutation{set("spec.disruption.budgets[0].schedule", "0 0 10 * * mon"), set("spec.disruption.budgets[0].duration", "1h")}, "spec.disruption.budgets[0].schedule", "should match"},
		"budget schedule unknown macro":    {baseNodePool, []mutation{set("spec.disruption.budgets[0].schedule", "@fortnightly"), set("spec.disruption.budgets[0].duration", "1h")}, "spec.disruption.budgets[0].schedule", "should match"},
		"budget duration in seconds":       {baseNodePool, []mutation{set("spec.disruption.budgets[0].schedule", "@daily"), set("spec.disruption.budgets[0].duration", "30s")}, "spec.disruption.budgets[0].duration", "should match"},
		"budget unknown reason":            {baseNodePool, []mutation{set("spec.disruption.budgets[0].reasons", []any{"Bored"})}, "spec.disruption.budgets[0].reasons[0]", "Unsupported value"},
		"unknown consolidation policy":     {baseNodePool, []mutation{set("spec.disruption.consolidationPolicy", "WhenIdle")}, "spec.disruption.consolidationPolicy", "Unsupported value"},
		"consolidateAfter a word":          {baseNodePool, []mutation{set("spec.disruption.consolidateAfter", "soon")}, "spec.disruption.consolidateAfter", "should match"},
		"expireAfter in weeks":             {baseNodePool, []mutation{set(tmpl+"expireAfter", "2w")}, tmpl + "expireAfter", "should match"},
		"terminationGracePeriod Never":     {baseNodePool, []mutation{set(tmpl+"terminationGracePeriod", "Never")}, tmpl + "terminationGracePeriod", "should match"},
	})
}

func TestInvalidNodeClaims(t *testing.T) {
	runInvalidCases(t, map[string]invalidCase{
		"missing nodeClassRef":        {baseNodeClaim, []mutation{del("spec.nodeClassRef")}, "spec.nodeClassRef", "Required value"},
		"missing nodeClassRef kind":   {baseNodeClaim, []mutation{del("spec.nodeClassRef.kind")}, "spec.nodeClassRef.kind", "Required value"},
		"missing requirements":        {baseNodeClaim, []mutation{del("spec.requirements")}, "spec.requirements", "Required value"},
		"In without values":           {baseNodeClaim, []mutation{del("spec.requirements[0].values")}, "spec.requirements[0]", "operator 'In' must have a value defined"},
		"restricted requirement key":  {baseNodeClaim, []mutation{set("spec.requirements[0].key", "kubernetes.io/hostname")}, "spec.requirements[0].key", "is restricted"},
		"request not a quantity":      {baseNodeClaim, []mutation{set("spec.resources.requests.cpu", "one")}, "spec.resources.requests.cpu", "should match"},
		"taint with unknown effect":   {baseNodeClaim, []mutation{set("spec.taints", yamlValue(t, "[{key: a, effect: Maybe}]"))}, "spec.taints", "taint effect must be one of"},
		"expireAfter a word":          {baseNodeClaim, []mutation{set("spec.expireAfter", "later")}, "spec.expireAfter", "should match"},
		"terminationGracePeriod word": {baseNodeClaim, []mutation{set("spec.terminationGracePeriod", "soon")}, "spec.terminationGracePeriod", "should match"},
	})
}

const baseNodePoolV1beta1 = `
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata:
  name: base
spec:
  template:
    spec:
      nodeClassRef: {name: default}
      requirements:
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m]}
`

func TestInvalidV1beta1NodePools(t *testing.T) {
	runInvalidCases(t, map[string]invalidCase{
		"consolidateAfter with WhenUnderutilized": {baseNodePoolV1beta1, []mutation{set("spec.disruption.consolidateAfter", "30s"), set("spec.disruption.consolidationPolicy", "WhenUnderutilized")}, "spec.disruption", "consolidateAfter cannot be combined with consolidationPolicy=WhenUnderutilized"},
		"WhenEmpty without consolidateAfter":      {baseNodePoolV1beta1, []mutation{set("spec.disruption.consolidationPolicy", "WhenEmpty")}, "spec.disruption", "consolidateAfter must be specified with consolidationPolicy=WhenEmpty"},
		"missing nodeClassRef name":               {baseNodePoolV1beta1, []mutation{del("spec.template.spec.nodeClassRef.name")}, "spec.template.spec.nodeClassRef.name", "Required value"},
		"nodepool requirement":                    {baseNodePoolV1beta1, []mutation{set("spec.template.spec.requirements", yamlValue(t, "[{key: karpenter.sh/nodepool, operator: In, values: [a]}]"))}, "spec.template.spec.requirements[0].key", `label "karpenter.sh/nodepool" is restricted`},
		"label value with spaces":                 {baseNodePoolV1beta1, []mutation{set("spec.template.metadata.labels", map[string]any{"team": "a b"})}, "spec.template.metadata.labels.team", "should match"},
		"WhenEmptyOrUnderutilized is v1 only":     {baseNodePoolV1beta1, []mutation{set("spec.disruption.consolidationPolicy", "WhenEmptyOrUnderutilized")}, "spec.disruption.consolidationPolicy", "Unsupported value"},
	})
}
