package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// document is one object of an input: a YAML document, or one item of a
// kind: List document (the form of `kubectl get -o yaml`).
type document struct {
	source string
	// index is the 1-based position of the document among the non-empty
	// documents of source; item is the 1-based position in a List, else 0.
	index, item int
	// line is the line of source where the document or item starts.
	line int
	// raw is the document's text as written, emitted unchanged when the
	// document passes through; nil for a List item.
	raw []byte
	// json is the object as JSON.
	json []byte
	// node is the object's YAML node, for finding the line of a field; nil
	// when go-yaml cannot parse what sigs.k8s.io/yaml could.
	node *yaml.Node
	// lineOffset is added to node's line numbers (relative to the document).
	lineOffset int
	typeMeta   metav1.TypeMeta
	name       string
	// pos is the position of the document among all documents of the
	// conversion, for ordering warnings.
	pos int
}

// Chunk is the text of one YAML document and the line of the input it
// starts at.
type Chunk struct {
	Text []byte
	Line int
}

// SplitDocuments splits a YAML stream at its "---" separator lines ("---"
// alone or followed by a space). "..." ends a document. Chunks that hold
// nothing but comments and blank lines are dropped, so documents are numbered
// as a reader counts them.
func SplitDocuments(data []byte) []Chunk {
	var chunks []Chunk
	var current []byte
	start := 1
	flush := func(next int) {
		if hasContent(current) {
			if !bytes.HasSuffix(current, []byte("\n")) {
				current = append(current, '\n')
			}
			chunks = append(chunks, Chunk{Text: current, Line: start})
		}
		current, start = nil, next
	}
	for i, line := range bytes.SplitAfter(data, []byte("\n")) {
		trimmed := bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.Equal(trimmed, []byte("---")) || bytes.HasPrefix(trimmed, []byte("--- ")):
			flush(i + 2)
			if rest := bytes.TrimSpace(trimmed[3:]); len(rest) > 0 && rest[0] != '#' {
				// Content on the separator line ("--- {a: b}") starts the document.
				current, start = append(bytes.Clone(rest), '\n'), i+1
			}
		case bytes.Equal(trimmed, []byte("...")):
			flush(i + 2)
		default:
			current = append(current, line...)
		}
	}
	flush(0)
	return chunks
}

// hasContent reports whether text holds anything but blank and comment lines.
func hasContent(text []byte) bool {
	return firstContentLine(text) >= 0
}

// firstContentLine returns the 0-based index of the first line of text that
// is neither blank nor a comment, or -1.
func firstContentLine(text []byte) int {
	for i, line := range bytes.Split(text, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' {
			return i
		}
	}
	return -1
}

// parseChunk decodes one YAML document into its objects: one, or the items of
// a kind: List. An empty document gives none.
func parseChunk(source string, index int, c Chunk) ([]*document, error) {
	data, err := sigsyaml.YAMLToJSONStrict(c.Text)
	contentLine := c.Line + max(firstContentLine(c.Text), 0)
	if err != nil {
		return nil, yamlError(source, index, contentLine, c.Line, err)
	}
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, nil
	}
	root := &yaml.Node{}
	node := (*yaml.Node)(nil)
	if yaml.Unmarshal(c.Text, root) == nil && root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		node = root.Content[0]
	}
	doc := &document{source: source, index: index, line: contentLine, raw: c.Text, json: data, node: node, lineOffset: c.Line - 1}
	readTypeMeta(doc)
	if doc.typeMeta.APIVersion != "v1" || doc.typeMeta.Kind != "List" {
		return []*document{doc}, nil
	}

	list := struct {
		Items []json.RawMessage `json:"items"`
	}{}
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, &DocumentError{Source: source, Index: index, Line: contentLine, Field: "items", Err: err}
	}
	items := mappingValue(node, "items")
	docs := make([]*document, 0, len(list.Items))
	for i, item := range list.Items {
		d := &document{source: source, index: index, item: i + 1, line: contentLine, json: item, lineOffset: c.Line - 1}
		if items != nil && items.Kind == yaml.SequenceNode && i < len(items.Content) {
			d.node = items.Content[i]
			d.line = d.node.Line + d.lineOffset
		}
		readTypeMeta(d)
		docs = append(docs, d)
	}
	return docs, nil
}

// yamlError reports a document that is not YAML, at the line go-yaml names
// (counted from the document's first line, start) and with go-yaml's message
// stripped of its prefixes.
func yamlError(source string, index, contentLine, start int, err error) error {
	msg := err.Error()
	for _, prefix := range []string{"error converting YAML to JSON: ", "yaml: ", "unmarshal errors:"} {
		msg = strings.TrimSpace(strings.TrimPrefix(msg, prefix))
	}
	line := contentLine
	if m := regexp.MustCompile(`^line (\d+): `).FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		line, msg = start+n-1, msg[len(m[0]):]
	}
	return &DocumentError{Source: source, Index: index, Line: line, Err: fmt.Errorf("not valid YAML: %s", msg)}
}

// readTypeMeta fills typeMeta and name from the document's JSON; documents
// that are not objects keep them empty.
func readTypeMeta(d *document) {
	head := struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}{}
	if json.Unmarshal(d.json, &head) == nil {
		d.typeMeta, d.name = head.TypeMeta, head.Metadata.Name
	}
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

// lineOf returns the line of the deepest node on path (a field.Path string
// such as spec.requirements[2].operator) that the document has, or the
// document's first line.
func (d *document) lineOf(path string) int {
	node, line := d.node, d.line
	for _, step := range pathSteps(path) {
		var next *yaml.Node
		switch {
		case node == nil:
		case node.Kind == yaml.SequenceNode:
			if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(node.Content) {
				next = node.Content[i]
			}
		case node.Kind == yaml.MappingNode:
			for i := 0; i+1 < len(node.Content); i += 2 {
				if node.Content[i].Value == step {
					next = node.Content[i+1]
					line = node.Content[i].Line + d.lineOffset
				}
			}
		}
		if next == nil {
			break
		}
		if node.Kind == yaml.SequenceNode {
			line = next.Line + d.lineOffset
		}
		node = next
	}
	return line
}

// pathSteps splits a field path into field names, list indexes and map keys:
// "spec.labels[a/b]" -> spec, labels, a/b.
func pathSteps(path string) []string {
	var steps []string
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(steps, path[1:])
			}
			steps = append(steps, path[1:end])
			path = path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			steps = append(steps, path[:end])
			path = path[end:]
		}
	}
	return steps
}
