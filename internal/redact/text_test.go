package redact

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	for _, tc := range []struct{ in, secret string }{
		{"GET docker://alice:hunter2@quay.io/ns/app:1", "hunter2"},
		{"proxy https://bob:s3cr3t-pw@proxy.example.com:3128 refused", "s3cr3t-pw"},
		{"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.payload.sig", "eyJhbGciOiJSUzI1NiJ9"},
		{"authorization=Basic YWxpY2U6aHVudGVyMg==", "YWxpY2U6aHVudGVyMg"},
		{`{"auths":{"quay.io":{"auth":"YWxpY2U6aHVudGVyMg=="}}}`, "YWxpY2U6aHVudGVyMg"},
		{"token=abc123def456 password=pa55word", "pa55word"},
		{`{"identitytoken":"refresh-7e1f"}`, "refresh-7e1f"},
	} {
		got := Text(tc.in)
		if strings.Contains(got, tc.secret) {
			t.Errorf("Text(%q) = %q: the secret is still there", tc.in, got)
		}
	}
	for _, keep := range []string{
		"quay.io/ns/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		"image copy failed source=127.0.0.1:5000/tools/late:1.0 error=\"404 Not Found\"",
		"docker://quay.io/ns/app:1",
	} {
		if got := Text(keep); got != keep {
			t.Errorf("Text(%q) = %q: nothing secret to hide", keep, got)
		}
	}
}

func FuzzText(f *testing.F) {
	f.Add("docker://alice:hunter2@quay.io/ns/app:1")
	f.Add("Authorization: Bearer abcdefgh12345678")
	f.Fuzz(func(t *testing.T, s string) {
		once := Text(s)
		if Text(once) != once {
			t.Errorf("Text is not idempotent on %q", s)
		}
	})
}
