package catalogimage

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
)

// DefaultConfigsFolder is where nearly every catalog image keeps its catalog
// (the value of ConfigsLabel in Red Hat's and the community's catalogs).
const DefaultConfigsFolder = "/configs"

// speculation is an extraction started under DefaultConfigsFolder before the
// image config said where the catalog is: over a WAN the config's own
// transfer (new connections to the registry and its CDN) ends after the
// layer's has begun, and the extraction follows the layer as it arrives.
type speculation struct {
	cancel  context.CancelFunc
	done    chan struct{}
	tmp     string
	err     error
	onStart func() // o.OnRestart: forget the files it reported
	used    bool
}

// speculate starts the extraction of a catalog streamed from a registry,
// unless dir holds an earlier extraction (whose marker the config decides
// on). It returns nil when it did not start one.
func (fc *Fetched) speculate(ctx context.Context, dir string, o FetchOptions, log *slog.Logger) *speculation {
	if fc.stream == nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, completeMarker)); err == nil || os.MkdirAll(dir, 0o755) != nil {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &speculation{cancel: cancel, done: make(chan struct{}), onStart: o.OnRestart}
	log.Debug("extracting catalog", "catalog", fc.Ref, "digest", fc.Digest, "label", DefaultConfigsFolder+" (before the config's label arrived)", "inflater", inflater)
	go func() {
		defer close(s.done)
		s.tmp, s.err = fc.extract(ctx, dir, DefaultConfigsFolder, o, log)
	}()
	return s
}

// result returns the speculative extraction when the config's label and
// database say it extracted the right folder (ok); otherwise it stops it,
// removes what it wrote and tells the caller (OnRestart) to forget its files.
func (s *speculation) result(label, db string) (tmp string, err error, ok bool) {
	if s == nil {
		return "", nil, false
	}
	<-s.done
	if label == DefaultConfigsFolder && db == "" {
		s.used = true
		return s.tmp, s.err, true
	}
	s.discard()
	return "", nil, false
}

// discard stops an unused speculative extraction and removes its folder.
// Nil-safe; once result handed the extraction over, it only releases its
// context.
func (s *speculation) discard() {
	if s == nil {
		return
	}
	s.cancel()
	if s.used {
		return
	}
	s.used = true
	<-s.done
	if s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	}
	if s.onStart != nil {
		s.onStart()
	}
}
