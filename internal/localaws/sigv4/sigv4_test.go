package sigv4

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	cases := map[string]struct {
		header  string
		want    Credential
		wantErr bool
	}{
		"signed": {
			header: "AWS4-HMAC-SHA256 Credential=AKIDLOCAL/20261125/us-east-1/ec2/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc",
			want:   Credential{AccessKeyID: "AKIDLOCAL", Date: "20261125", Region: "us-east-1", Service: "ec2"},
		},
		"missing":           {wantErr: true},
		"wrong algorithm":   {header: "AWS4-HMAC-SHA512 Credential=a/b/c/d/aws4_request, SignedHeaders=h, Signature=s", wantErr: true},
		"no signature":      {header: "AWS4-HMAC-SHA256 Credential=a/b/us-east-1/ec2/aws4_request, SignedHeaders=h", wantErr: true},
		"short scope":       {header: "AWS4-HMAC-SHA256 Credential=a/b/us-east-1, SignedHeaders=h, Signature=s", wantErr: true},
		"not aws4_request":  {header: "AWS4-HMAC-SHA256 Credential=a/b/us-east-1/ec2/aws5, SignedHeaders=h, Signature=s", wantErr: true},
		"empty service key": {header: "AWS4-HMAC-SHA256 Credential=a/b/us-east-1//aws4_request, SignedHeaders=h, Signature=s", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/", nil)
			if tc.header != "" {
				r.Header.Set("Authorization", tc.header)
			}
			got, err := Parse(r)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Parse() error = %v, wantErr %v", err, tc.wantErr)
			}
			if name == "missing" && !errors.Is(err, ErrMissing) {
				t.Fatalf("Parse() error = %v, want ErrMissing", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("Parse() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
