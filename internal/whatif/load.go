package whatif

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/workqueue"
	sigsjson "sigs.k8s.io/json"

	awsv1 "github.com/dovetail-autoscaler/dovetail/api/aws/v1"
	v1 "github.com/dovetail-autoscaler/dovetail/api/karpenter/v1"
	"github.com/dovetail-autoscaler/dovetail/api/karpenter/v1alpha1"
	kwokv1alpha1 "github.com/dovetail-autoscaler/dovetail/api/kwok/v1alpha1"
	"github.com/dovetail-autoscaler/dovetail/internal/conversion/manifest"
)

// InputError is an object of a file that cannot be read: not YAML, of a
// kind Dovetail does not read, or with a field that does not fit its kind.
type InputError struct {
	// Source names the file ("<stdin>" for standard input).
	Source string
	// Document is the 1-based index of the YAML document in Source.
	Document int
	// Line is the 1-based line of Source the problem is on.
	Line int
	// Field is the path of the offending field, when there is one.
	Field string
	// Message says what is wrong.
	Message string
}

// Error implements error: "file.yaml:12: document 3: field spec.foo: unknown field".
func (e *InputError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: document %d: ", e.Source, e.Line, e.Document)
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Message)
	return b.String()
}

// kindInfo decodes one kind into Objects.
type kindInfo struct {
	apiVersion string
	add        func(o *Objects, data []byte) []error
}

// typed decodes data strictly into a new T and appends it with add.
func typed[T any](add func(o *Objects, x *T)) func(o *Objects, data []byte) []error {
	return func(o *Objects, data []byte) []error {
		x := new(T)
		strict, err := sigsjson.UnmarshalStrict(data, x, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
		if err != nil {
			return []error{err}
		}
		if len(strict) > 0 {
			return strict
		}
		add(o, x)
		return nil
	}
}

// nodeClass validates data as T and keeps the object unstructured.
func nodeClass[T any]() func(o *Objects, data []byte) []error {
	check := typed(func(*Objects, *T) {})
	return func(o *Objects, data []byte) []error {
		if errs := check(o, data); len(errs) > 0 {
			return errs
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return []error{err}
		}
		o.NodeClasses = append(o.NodeClasses, u)
		return nil
	}
}

// kinds are the kinds Load reads, by kind.
var kinds = map[string]kindInfo{
	"Node": {"v1", typed(func(o *Objects, x *corev1.Node) { o.Nodes = append(o.Nodes, x) })},
	"Pod":  {"v1", typed(func(o *Objects, x *corev1.Pod) { o.Pods = append(o.Pods, x) })},
	"PersistentVolumeClaim": {"v1", typed(func(o *Objects, x *corev1.PersistentVolumeClaim) {
		o.PersistentVolumeClaims = append(o.PersistentVolumeClaims, x)
	})},
	"PersistentVolume": {"v1", typed(func(o *Objects, x *corev1.PersistentVolume) { o.PersistentVolumes = append(o.PersistentVolumes, x) })},
	"Namespace":        {"v1", typed(func(o *Objects, x *corev1.Namespace) { o.Namespaces = append(o.Namespaces, x) })},
	"DaemonSet":        {"apps/v1", typed(func(o *Objects, x *appsv1.DaemonSet) { o.DaemonSets = append(o.DaemonSets, x) })},
	"Deployment":       {"apps/v1", typed(func(o *Objects, x *appsv1.Deployment) { o.Deployments = append(o.Deployments, x) })},
	"StatefulSet":      {"apps/v1", typed(func(o *Objects, x *appsv1.StatefulSet) { o.StatefulSets = append(o.StatefulSets, x) })},
	"ReplicaSet":       {"apps/v1", typed(func(o *Objects, x *appsv1.ReplicaSet) { o.ReplicaSets = append(o.ReplicaSets, x) })},
	"PodDisruptionBudget": {"policy/v1", typed(func(o *Objects, x *policyv1.PodDisruptionBudget) {
		o.PDBs = append(o.PDBs, x)
	})},
	"StorageClass":  {"storage.k8s.io/v1", typed(func(o *Objects, x *storagev1.StorageClass) { o.StorageClasses = append(o.StorageClasses, x) })},
	"NodePool":      {v1.SchemeGroupVersion.String(), typed(func(o *Objects, x *v1.NodePool) { o.NodePools = append(o.NodePools, x) })},
	"NodeClaim":     {v1.SchemeGroupVersion.String(), typed(func(o *Objects, x *v1.NodeClaim) { o.NodeClaims = append(o.NodeClaims, x) })},
	"EC2NodeClass":  {awsv1.SchemeGroupVersion.String(), nodeClass[awsv1.EC2NodeClass]()},
	"KWOKNodeClass": {kwokv1alpha1.SchemeGroupVersion.String(), nodeClass[kwokv1alpha1.KWOKNodeClass]()},
	"NodeOverlay":   {v1alpha1.SchemeGroupVersion.String(), nodeOverlay},
}

// KnownKinds lists the kinds Load reads, as "Kind (apiVersion)".
func KnownKinds() []string {
	order := []string{"Node", "NodeClaim", "NodePool", "EC2NodeClass", "KWOKNodeClass", "NodeOverlay", "Pod", "DaemonSet", "Deployment",
		"StatefulSet", "ReplicaSet", "PodDisruptionBudget", "PersistentVolumeClaim", "PersistentVolume", "StorageClass", "Namespace"}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, fmt.Sprintf("%s (%s)", k, kinds[k].apiVersion))
	}
	return out
}

// Load reads a YAML stream of any number of documents (and kind: List
// documents, as `kubectl get -o yaml` writes them) into objs. Nothing is
// added when any document is bad; the error is an *InputError naming the
// source, document, line and field. Documents are decoded in parallel: a
// snapshot of a large cluster is megabytes of YAML.
func Load(source string, data []byte, objs *Objects) error {
	chunks := manifest.SplitDocuments(data)
	results := make([]*Objects, len(chunks))
	errs := make([]error, len(chunks))
	workqueue.ParallelizeUntil(context.Background(), runtime.GOMAXPROCS(0), len(chunks), func(i int) {
		results[i], errs[i] = loadChunk(source, i+1, chunks[i])
	})
	for i := range chunks {
		if errs[i] != nil {
			return errs[i]
		}
	}
	for _, r := range results {
		objs.append(r)
	}
	return nil
}

// loadChunk decodes one document.
func loadChunk(source string, index int, c manifest.Chunk) (*Objects, error) {
	var node yaml.Node
	if err := yaml.Unmarshal(c.Text, &node); err != nil {
		return nil, yamlError(source, index, c.Line, err)
	}
	o := &Objects{}
	if len(node.Content) == 0 || node.Content[0].Kind == yaml.ScalarNode && node.Content[0].Tag == "!!null" {
		return o, nil
	}
	if err := loadNode(o, source, index, c.Line-1, node.Content[0], ""); err != nil {
		return nil, err
	}
	return o, nil
}

func (o *Objects) append(x *Objects) {
	o.Nodes = append(o.Nodes, x.Nodes...)
	o.NodeClaims = append(o.NodeClaims, x.NodeClaims...)
	o.NodePools = append(o.NodePools, x.NodePools...)
	o.NodeClasses = append(o.NodeClasses, x.NodeClasses...)
	o.NodeOverlays = append(o.NodeOverlays, x.NodeOverlays...)
	o.Pods = append(o.Pods, x.Pods...)
	o.DaemonSets = append(o.DaemonSets, x.DaemonSets...)
	o.Deployments = append(o.Deployments, x.Deployments...)
	o.StatefulSets = append(o.StatefulSets, x.StatefulSets...)
	o.ReplicaSets = append(o.ReplicaSets, x.ReplicaSets...)
	o.PDBs = append(o.PDBs, x.PDBs...)
	o.PersistentVolumeClaims = append(o.PersistentVolumeClaims, x.PersistentVolumeClaims...)
	o.PersistentVolumes = append(o.PersistentVolumes, x.PersistentVolumes...)
	o.StorageClasses = append(o.StorageClasses, x.StorageClasses...)
	o.Namespaces = append(o.Namespaces, x.Namespaces...)
}

// loadNode decodes one object (or List) node; prefix is the field path of
// the node in its document ("items[2]." for List items).
func loadNode(o *Objects, source string, index, offset int, node *yaml.Node, prefix string) error {
	fail := func(field, msg string) error {
		return &InputError{Source: source, Document: index, Line: offset + lineOf(node, field), Field: prefix + field, Message: msg}
	}
	if node.Kind != yaml.MappingNode {
		return fail("", "not an object")
	}
	scalar := func(key string) string {
		if v := mappingValue(node, key); v != nil && v.Kind == yaml.ScalarNode {
			return v.Value
		}
		return ""
	}
	apiVersion, kind := scalar("apiVersion"), scalar("kind")
	if kind == "" {
		return fail("kind", "missing kind")
	}
	if items := mappingValue(node, "items"); items != nil && (kind == "List" || strings.HasSuffix(kind, "List")) {
		for i, item := range items.Content {
			if err := loadNode(o, source, index, offset, item, fmt.Sprintf("%sitems[%d].", prefix, i)); err != nil {
				return err
			}
		}
		return nil
	}
	var buf bytes.Buffer
	if err := toJSON(&buf, node); err != nil {
		return fail("", err.Error())
	}
	data := buf.Bytes()
	info, ok := kinds[kind]
	if !ok {
		return fail("kind", fmt.Sprintf("kind %s is not one Dovetail reads (it reads %s)", kind, strings.Join(KnownKinds(), ", ")))
	}
	if apiVersion != info.apiVersion {
		return fail("apiVersion", fmt.Sprintf("%s must be apiVersion %s, not %q", kind, info.apiVersion, apiVersion))
	}
	for _, e := range info.add(o, data) {
		field, msg := fieldOf(e)
		return fail(field, msg)
	}
	return nil
}

var (
	strictField = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)
	typeField   = regexp.MustCompile(`^json: cannot unmarshal (\S+) into Go struct field [^.]*\.(\S+) of type (\S+)$`)
	yamlLine    = regexp.MustCompile(`^yaml: line (\d+): `)
)

// fieldOf turns a strict-decoding error into a field path and a message.
func fieldOf(err error) (field, msg string) {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe.field, fe.msg
	}
	s := err.Error()
	if m := strictField.FindStringSubmatch(s); m != nil {
		return m[2], m[1] + " field"
	}
	if m := typeField.FindStringSubmatch(s); m != nil {
		return m[2], fmt.Sprintf("must be %s, not %s", m[3], m[1])
	}
	if i := strings.Index(s, "Go struct field "); i >= 0 {
		rest := s[i+len("Go struct field "):]
		if name, _, ok := strings.Cut(rest, " "); ok {
			if _, path, ok := strings.Cut(name, "."); ok {
				return path, s
			}
		}
	}
	return "", s
}

func yamlError(source string, index, start int, err error) error {
	msg := err.Error()
	line := start
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		line, msg = start+n-1, msg[len(m[0]):]
	}
	return &InputError{Source: source, Document: index, Line: line, Message: "not valid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// toJSON writes a YAML node as JSON, resolving scalars as go-yaml does
// (timestamps stay strings, as Kubernetes writes them). Walking the node
// tree is several times faster than decoding it into maps and encoding
// those, which matters for snapshots of large clusters.
func toJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return toJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return toJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		first := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Tag == "!!merge" {
				return fmt.Errorf("line %d: merge keys (<<) are not supported", k.Line)
			}
			if !first {
				buf.WriteByte(',')
			}
			first = false
			key, _ := json.Marshal(k.Value)
			buf.Write(key)
			buf.WriteByte(':')
			if err := toJSON(buf, v); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, v := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := toJSON(buf, v); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		return scalarJSON(buf, n)
	}
	return nil
}

func scalarJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.ShortTag() {
	case "!!null":
		buf.WriteString("null")
		return nil
	case "!!bool", "!!int", "!!float":
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		out, err := json.Marshal(v)
		if err != nil {
			// NaN and infinities have no JSON form; keep them as text.
			out, _ = json.Marshal(n.Value)
		}
		buf.Write(out)
		return nil
	}
	out, _ := json.Marshal(n.Value)
	buf.Write(out)
	return nil
}

// mappingValue returns the value node of key in a mapping node, or nil.
func mappingValue(node *yaml.Node, key string) *yaml.Node {
	if node == nil || node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i+1]
		}
	}
	return nil
}

// lineOf returns the line of the deepest node on a field path
// (spec.containers[0].image) that the document has.
func lineOf(node *yaml.Node, path string) int {
	line := node.Line
	for _, step := range pathSteps(path) {
		var next *yaml.Node
		switch node.Kind {
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(node.Content) {
				next = node.Content[i]
				line = next.Line
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == step {
					next = node.Content[i+1]
					line = node.Content[i].Line
				}
			}
		}
		if next == nil {
			break
		}
		node = next
	}
	return line
}

// pathSteps splits "spec.containers[0].image" into spec, containers, 0, image.
func pathSteps(path string) []string {
	var steps []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			open := strings.IndexByte(part, '[')
			if open < 0 {
				steps = append(steps, part)
				break
			}
			if open > 0 {
				steps = append(steps, part[:open])
			}
			end := strings.IndexByte(part[open:], ']')
			if end < 0 {
				steps = append(steps, part[open+1:])
				break
			}
			steps = append(steps, part[open+1:open+end])
			part = part[open+end+1:]
		}
	}
	return steps
}
