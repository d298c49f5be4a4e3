package oci

import "strings"

// APIPathKind names what a request path of the distribution API asks for:
// "base" (/v2/, the version check), "catalog", "tags" (a tag listing),
// "upload" (blob upload sessions), "blob", "manifest", or "other". It reads the
// path's shape only (a repository named "blobs" would fool it), which is what
// request accounting and per-kind timeouts need.
func APIPathKind(path string) string {
	p := strings.TrimPrefix(path, "/v2/")
	switch {
	case path == "/v2/" || path == "/v2":
		return "base"
	case p == "_catalog":
		return "catalog"
	case strings.Contains(p, "/blobs/uploads"):
		return "upload"
	case strings.Contains(p, "/blobs/"):
		return "blob"
	case strings.Contains(p, "/manifests/"):
		return "manifest"
	case strings.HasSuffix(p, "/tags/list"):
		return "tags"
	}
	return "other"
}
