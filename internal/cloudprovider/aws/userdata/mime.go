package userdata

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"sort"
	"strings"
)

// boundary is the MIME boundary of every document Karpenter writes.
const boundary = "//"

// mimePart is one part of a multipart document: its headers in output
// order and its content.
type mimePart struct {
	header  [][2]string
	content string
}

// isMIME reports whether user data is a MIME document, by Karpenter's rule:
// after trimming whitespace it starts with a MIME-Version or Content-Type
// header.
func isMIME(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, "MIME-Version:") || strings.HasPrefix(s, "Content-Type:")
}

// parseMIME splits a multipart document into its parts. Every header of a
// part is kept, sorted by name. The document's own boundary may be anything.
func parseMIME(s string) ([]mimePart, error) {
	msg, err := mail.ReadMessage(strings.NewReader(strings.TrimLeft(s, " \t\r\n")))
	if err != nil {
		return nil, fmt.Errorf("reading MIME headers: %w", err)
	}
	ct := msg.Header.Get("Content-Type")
	if ct == "" {
		return nil, errors.New("MIME document has no Content-Type header")
	}
	mediaType, params, err := mime.ParseMediaType(ct)
	if err != nil {
		return nil, fmt.Errorf("parsing MIME Content-Type %q: %w", ct, err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		return nil, fmt.Errorf("MIME Content-Type is %q, want multipart/mixed", mediaType)
	}
	b := params["boundary"]
	if b == "" {
		return nil, fmt.Errorf("MIME Content-Type %q has no boundary", ct)
	}
	r := multipart.NewReader(msg.Body, b)
	var parts []mimePart
	for i := 1; ; i++ {
		p, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d (boundary %q): %w", i, b, err)
		}
		content, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d (boundary %q): %w", i, b, err)
		}
		keys := make([]string, 0, len(p.Header))
		for k := range p.Header {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		part := mimePart{content: string(content)}
		for _, k := range keys {
			for _, v := range p.Header[k] {
				part.header = append(part.header, [2]string{k, v})
			}
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("MIME document has no parts delimited by its boundary %q", b)
	}
	return parts, nil
}

// contentType returns the part's Content-Type header, or "".
func (p mimePart) contentType() string {
	for _, h := range p.header {
		if strings.EqualFold(h[0], "Content-Type") {
			return h[1]
		}
	}
	return ""
}

// userParts turns spec.userData into MIME parts: the parts of a MIME
// document (with all headers, or with Content-Type only), or the whole text
// as one part whose type classify picks.
func userParts(userData *string, allHeaders bool, classify func(string) string) ([]mimePart, error) {
	if userData == nil || *userData == "" {
		return nil, nil
	}
	if !isMIME(*userData) {
		return []mimePart{{
			header:  [][2]string{{"Content-Type", classify(*userData)}},
			content: *userData,
		}}, nil
	}
	parts, err := parseMIME(*userData)
	if err != nil {
		return nil, err
	}
	if !allHeaders {
		for i, p := range parts {
			parts[i].header = nil
			if ct := p.contentType(); ct != "" {
				parts[i].header = [][2]string{{"Content-Type", ct}}
			}
		}
	}
	return parts, nil
}

// writeMIME writes the parts as a multipart/mixed document with boundary
// "//" and LF line endings.
func writeMIME(parts []mimePart) string {
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\n")
	fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=%q\n\n", boundary)
	for _, p := range parts {
		b.WriteString("--" + boundary + "\n")
		for _, h := range p.header {
			b.WriteString(h[0] + ": " + h[1] + "\n")
		}
		b.WriteString("\n")
		b.WriteString(p.content)
		b.WriteString("\n")
	}
	b.WriteString("--" + boundary + "--\n")
	return strings.ReplaceAll(b.String(), "\r", "")
}
