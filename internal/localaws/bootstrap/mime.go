package bootstrap

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"strings"
)

// part is one MIME part: its media type and body.
type part struct {
	mediaType string
	body      string
}

// isMIME reports whether user data is a MIME document, as cloud-init and
// nodeadm decide it: it starts with a MIME header.
func isMIME(trimmed string) bool {
	lower := strings.ToLower(trimmed)
	return strings.HasPrefix(lower, "mime-version:") || strings.HasPrefix(lower, "content-type:")
}

// parseMIME reads a multipart document into its parts.
func parseMIME(s string) ([]part, error) {
	msg, err := mail.ReadMessage(strings.NewReader(strings.TrimLeft(s, " \t\r\n")))
	if err != nil {
		return nil, fmt.Errorf("reading MIME headers: %w", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("reading MIME Content-Type: %w", err)
	}
	if !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("MIME document is %q without a multipart boundary", mt)
	}
	r := multipart.NewReader(msg.Body, params["boundary"])
	var parts []part
	for {
		p, err := r.NextRawPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(parts)+1, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(parts)+1, err)
		}
		var pmt string
		if ct := p.Header.Get("Content-Type"); ct != "" {
			if pmt, _, err = mime.ParseMediaType(ct); err != nil {
				return nil, fmt.Errorf("reading MIME part %d Content-Type: %w", len(parts)+1, err)
			}
		}
		parts = append(parts, part{mediaType: pmt, body: string(body)})
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("MIME document has no parts with boundary %q", params["boundary"])
	}
	return parts, nil
}

func isNodeConfigPart(p part) bool { return p.mediaType == "application/node.eks.aws" }
