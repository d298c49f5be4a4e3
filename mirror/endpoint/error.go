package endpoint

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// RegistryError is airlock's one typed registry error: an answer a registry
// (or a CDN or token server it sent the request to) gave that the operation
// did not expect. The registry client makes it where it reads the answer,
// parsing the body once into the distribution spec's error list; everyone
// else reads its fields (errors.As, or the helpers StatusOf and HasCode),
// never the body's text.
type RegistryError struct {
	// Method and URL are the request's; the URL carries no credentials and
	// no query (a CDN's signed URL keeps secrets there).
	Method, URL string
	// Host is the host that answered: the registry's, or that of the CDN or
	// token server it sent the request to.
	Host string
	// StatusCode is the answer's HTTP status.
	StatusCode int
	// Errors are the errors the body listed ({"errors":[{"code":…}]}), in
	// order; none for an answer without such a list (a HEAD, a proxy's HTML
	// page).
	Errors []ErrorDetail
	// Text is the start of a body that held no such list, for messages.
	Text string
	// ExpiredToken marks a 401 whose challenge said the bearer token was
	// invalid (expired or revoked), not the credentials: worth another
	// attempt.
	ExpiredToken bool
	// RetryAfter is the wait the answer's Retry-After header asked for;
	// HasRetryAfter says it had one.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Cause, when set, is the error this one was made from (the answer to a
	// ping or a token request, as the HTTP library reported it): its text is
	// this error's, and errors.As finds what it wraps.
	Cause error
}

// ErrorDetail is one entry of a registry's error list.
type ErrorDetail struct {
	// Code is the entry's code, upper case (see the Code constants; registries
	// add their own, such as Harbor's NOT_FOUND).
	Code ErrorCode `json:"code"`
	// Message is the registry's sentence.
	Message string `json:"message,omitempty"`
	// Detail is the entry's detail: a string as it was, anything else as
	// compact JSON ("" when there is none).
	Detail string `json:"detail,omitempty"`
}

// ErrorCode is a registry error code.
type ErrorCode string

// The error codes of the OCI distribution spec (and those Distribution and
// Docker's registry API add) that registries send in an error list.
const (
	CodeBlobUnknown         ErrorCode = "BLOB_UNKNOWN"
	CodeBlobUploadInvalid   ErrorCode = "BLOB_UPLOAD_INVALID"
	CodeBlobUploadUnknown   ErrorCode = "BLOB_UPLOAD_UNKNOWN"
	CodeDigestInvalid       ErrorCode = "DIGEST_INVALID"
	CodeManifestBlobUnknown ErrorCode = "MANIFEST_BLOB_UNKNOWN"
	CodeManifestInvalid     ErrorCode = "MANIFEST_INVALID"
	CodeManifestUnknown     ErrorCode = "MANIFEST_UNKNOWN"
	CodeManifestUnverified  ErrorCode = "MANIFEST_UNVERIFIED"
	CodeNameInvalid         ErrorCode = "NAME_INVALID"
	CodeNameUnknown         ErrorCode = "NAME_UNKNOWN"
	CodeSizeInvalid         ErrorCode = "SIZE_INVALID"
	CodeTagInvalid          ErrorCode = "TAG_INVALID"
	CodeUnauthorized        ErrorCode = "UNAUTHORIZED"
	CodeDenied              ErrorCode = "DENIED"
	CodeUnsupported         ErrorCode = "UNSUPPORTED"
	CodeTooManyRequests     ErrorCode = "TOOMANYREQUESTS"
	CodeUnknown             ErrorCode = "UNKNOWN"
	CodeUnavailable         ErrorCode = "UNAVAILABLE"
)

func (e *RegistryError) Error() string {
	if e.Cause != nil {
		return e.Cause.Error()
	}
	msg := fmt.Sprintf("%s %s: %d %s", e.Method, e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if len(e.Errors) > 0 {
		parts := make([]string, len(e.Errors))
		for i, d := range e.Errors {
			parts[i] = d.String()
		}
		return msg + ": " + strings.Join(parts, "; ")
	}
	if e.Text != "" {
		msg += ": " + e.Text
	}
	return msg
}

// Unwrap returns Cause.
func (e *RegistryError) Unwrap() error { return e.Cause }

// ErrNotFound is what errors.Is finds in a registry's answer that the
// manifest, blob or repository asked for does not exist (a 404, or a
// MANIFEST_UNKNOWN, BLOB_UNKNOWN or NAME_UNKNOWN in its error list).
var ErrNotFound = errors.New("not found in the registry")

// Is makes errors.Is(err, ErrNotFound) true for an answer saying that what
// was asked for does not exist.
func (e *RegistryError) Is(target error) bool {
	return target == ErrNotFound &&
		(e.StatusCode == http.StatusNotFound || e.Has(CodeManifestUnknown, CodeBlobUnknown, CodeNameUnknown))
}

// Has reports whether the error list holds one of codes.
func (e *RegistryError) Has(codes ...ErrorCode) bool {
	for _, d := range e.Errors {
		if slices.Contains(codes, d.Code) {
			return true
		}
	}
	return false
}

// String is "CODE: message" (and "; detail").
func (d ErrorDetail) String() string {
	s := string(d.Code)
	if d.Message != "" {
		s += ": " + d.Message
	}
	if d.Detail != "" && d.Detail != "{}" && d.Detail != "[]" {
		s += "; " + d.Detail
	}
	return s
}

// AsRegistryError returns the registry answer err carries, if any.
func AsRegistryError(err error) (*RegistryError, bool) {
	var re *RegistryError
	ok := errors.As(err, &re)
	return re, ok
}

// StatusOf returns the HTTP status of the registry answer err carries (0
// when it carries none).
func StatusOf(err error) int {
	if re, ok := AsRegistryError(err); ok {
		return re.StatusCode
	}
	return 0
}

// HasCode reports whether err carries a registry answer whose error list
// holds one of codes.
func HasCode(err error, codes ...ErrorCode) bool {
	re, ok := AsRegistryError(err)
	return ok && re.Has(codes...)
}
