package registry

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// maxTagsShown bounds the tags a MissingTagError names.
const maxTagsShown = 10

// MissingTagError is a manifest asked for by a tag its repository does not
// have, with some of the tags it has instead of the registry's raw answer. It
// unwraps to the registry's 404 (an *endpoint.RegistryError).
type MissingTagError struct {
	Repo, Tag string
	// Tags are up to maxTagsShown of the repository's tags (the last ones in
	// sort order, where the newest versions usually are); Total counts them all.
	Tags  []string
	Total int
	cause error
}

func (e *MissingTagError) Error() string {
	switch {
	case e.Total == 0:
		return fmt.Sprintf("%s has no tag %s: the repository has no tags (check the repository path)", e.Repo, e.Tag)
	case e.Total > len(e.Tags):
		return fmt.Sprintf("%s has no tag %s; it has %d tags, the last in sort order: %s", e.Repo, e.Tag, e.Total, strings.Join(e.Tags, ", "))
	}
	return fmt.Sprintf("%s has no tag %s; its tags: %s", e.Repo, e.Tag, strings.Join(e.Tags, ", "))
}

func (e *MissingTagError) Unwrap() error { return e.cause }

// missingTag turns a 404 for repo:reference, a tag, into a MissingTagError
// naming the tags the repository has; any other error (or a failure to list
// the tags) is returned unchanged.
func (r *Client) missingTag(ctx context.Context, repo, reference string, err error) error {
	if endpoint.StatusOf(err) != http.StatusNotFound {
		return err
	}
	if _, derr := digest.Parse(reference); derr == nil {
		return err // by digest: no tag to suggest
	}
	tags, terr := r.Tags(ctx, repo)
	if terr != nil {
		return err
	}
	sort.Strings(tags)
	shown := tags
	if len(shown) > maxTagsShown {
		shown = shown[len(shown)-maxTagsShown:]
	}
	return &MissingTagError{Repo: repo, Tag: reference, Tags: shown, Total: len(tags), cause: err}
}
