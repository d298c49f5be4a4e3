package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// Bounds on what an error answer keeps: the body read to parse it, the
// entries of its list, and the text of a message, a detail, or a body that
// is no list.
const (
	maxErrorBody    = 16 << 10
	maxErrorEntries = 16
	maxErrorText    = 512
)

// statusError is the registry error of an answer the operation did not
// expect: it reads a bounded part of resp's body and parses it, once, into
// the distribution spec's error list (parseErrorBody). A 401 whose challenge
// says invalid_token (RFC 6750: the token expired or was revoked) is marked
// as such: the bearer transport fetches one new token and resends once, and a
// token that ran out again before that resend arrived (a short-lived token on
// a slow link or a loaded machine) is worth another attempt, unlike
// credentials the registry refuses.
func statusError(resp *http.Response) *endpoint.RegistryError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	re := answerError(resp.Request, resp.StatusCode)
	re.Errors, re.Text = parseErrorBody(b)
	re.RetryAfter, re.HasRetryAfter = retry.ParseRetryAfter(resp.Header.Get("Retry-After"))
	if resp.StatusCode == http.StatusUnauthorized {
		for _, c := range resp.Header.Values("WWW-Authenticate") {
			re.ExpiredToken = re.ExpiredToken || strings.Contains(c, `error="invalid_token"`)
		}
	}
	return re
}

// answerError is the registry error of an answer with status code to req,
// without its body (a HEAD's).
func answerError(req *http.Request, code int) *endpoint.RegistryError {
	return &endpoint.RegistryError{Method: req.Method, URL: redactURL(req.URL), Host: req.URL.Host, StatusCode: code}
}

// parseErrorBody reads a registry's error answer: the distribution spec's
// {"errors":[{"code":…,"message":…,"detail":…}]} (Distribution, Quay,
// Harbor, ECR, GHCR, Artifactory and Nexus all send it), a lone entry
// ({"code":…,"message":…}) or an "errors" that is one entry instead of a list.
// Codes are upper-cased. A body that holds none of these is returned as text
// (its start, trimmed), for messages. It never fails: what it cannot read
// stays text.
func parseErrorBody(b []byte) (entries []endpoint.ErrorDetail, text string) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, ""
	}
	var doc struct {
		Errors json.RawMessage `json:"errors"`
		errorEntry
	}
	if json.Unmarshal(b, &doc) == nil {
		var list []errorEntry
		if json.Unmarshal(doc.Errors, &list) != nil {
			var one errorEntry
			if json.Unmarshal(doc.Errors, &one) == nil {
				list = []errorEntry{one}
			}
		}
		for _, e := range append(list, doc.errorEntry) { // entries without a code are skipped
			if d, ok := e.detail(); ok && len(entries) < maxErrorEntries {
				entries = append(entries, d)
			}
		}
		if len(entries) > 0 {
			return entries, ""
		}
	}
	return nil, clip(strings.TrimSpace(string(b)))
}

// errorEntry is one entry of an error list as sent: each field may be of any
// JSON type.
type errorEntry struct {
	Code    json.RawMessage `json:"code"`
	Message json.RawMessage `json:"message"`
	Detail  json.RawMessage `json:"detail"`
}

// detail reads the entry; ok is false when it has no code.
func (e errorEntry) detail() (endpoint.ErrorDetail, bool) {
	code := strings.ToUpper(strings.TrimSpace(jsonText(e.Code)))
	if code == "" {
		return endpoint.ErrorDetail{}, false
	}
	return endpoint.ErrorDetail{Code: endpoint.ErrorCode(clip(code)), Message: clip(jsonText(e.Message)), Detail: clip(jsonText(e.Detail))}, true
}

// jsonText is a JSON string's value, or any other JSON value as compact
// JSON; "" for nothing or null.
func jsonText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// clip cuts s to maxErrorText bytes, on a character boundary.
func clip(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	s = s[:maxErrorText]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// typedTransportError makes the answer to a ping or a token request, which
// go-containerregistry's transport reports as its own error type, a registry
// error like any other answer (its text and what it wraps unchanged, as its
// Cause); other errors are returned as they are.
func typedTransportError(err error) error {
	var te *transport.Error
	if err == nil || !errors.As(err, &te) {
		return err
	}
	if _, ok := endpoint.AsRegistryError(err); ok {
		return err
	}
	re := &endpoint.RegistryError{StatusCode: te.StatusCode, Cause: err}
	if te.Request != nil {
		re.Method, re.URL, re.Host = te.Request.Method, redactURL(te.Request.URL), te.Request.URL.Host
	}
	for _, d := range te.Errors {
		if len(re.Errors) == maxErrorEntries {
			break
		}
		detail := ""
		if d.Detail != nil {
			if b, jerr := json.Marshal(d.Detail); jerr == nil {
				detail = jsonText(b)
			}
		}
		re.Errors = append(re.Errors, endpoint.ErrorDetail{Code: endpoint.ErrorCode(strings.ToUpper(string(d.Code))), Message: clip(d.Message), Detail: clip(detail)})
	}
	return re
}
