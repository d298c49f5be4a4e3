package fbc

import (
	"context"
	"io/fs"
	"os"
	"sync"
)

// Prefetch parses the files of a catalog while the catalog is still being
// written (extracted from an image layer, say), so that loading overlaps with
// writing. Give it each file with Add once the file is complete; Load then
// loads the finished catalog exactly as LoadDir does, taking a file's
// prefetched documents only when the file is still the one that was parsed
// (same file, size and modification time) and when it was parsed without
// error, and parsing every other file itself. Which files belong to the
// catalog (.indexignore) is decided by Load, on the finished folder: a
// prefetched file that turns out to be ignored is dropped, its errors too.
//
// One goroutine parses, so that the writer keeps a core to itself.
type Prefetch struct {
	opts LoadOptions
	ctx  context.Context
	stop context.CancelFunc

	mu      sync.Mutex
	queue   []prefetchTask
	wake    chan struct{}
	done    chan struct{}
	roots   map[string]*os.Root
	results map[string]prefetchResult // by file name
	stopped bool
	reused  int // files Load took from the prefetch (for tests and the log)
	gen     int // bumped by Forget: a parse of an earlier generation is dropped
}

type prefetchTask struct{ root, name string }

type prefetchResult struct {
	docs []parsedDoc
	n    int64
	info fs.FileInfo
}

// NewPrefetch starts a prefetcher that parses with opts (KeepBelow aside: the
// prefetched documents are kept only if Load decides on the same eliding).
func NewPrefetch(ctx context.Context, opts LoadOptions) *Prefetch {
	ctx, stop := context.WithCancel(ctx)
	p := &Prefetch{opts: opts, ctx: ctx, stop: stop, wake: make(chan struct{}, 1), done: make(chan struct{}),
		roots: map[string]*os.Root{}, results: map[string]prefetchResult{}}
	go p.run()
	return p
}

// Add queues the file name (slash-separated, relative to root) for parsing. It
// returns at once.
func (p *Prefetch) Add(root, name string) {
	p.mu.Lock()
	if !p.stopped {
		p.queue = append(p.queue, prefetchTask{root, name})
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// Forget drops every file given so far, parsed or queued (the writer started
// over): only files given after it count.
func (p *Prefetch) Forget() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	p.queue = nil
	p.results = map[string]prefetchResult{}
}

// Close stops the prefetcher, dropping what it parsed; for a prefetcher whose
// catalog will not be loaded (Load stops it otherwise).
func (p *Prefetch) Close() {
	p.halt()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.roots {
		r.Close()
	}
	p.roots, p.results = nil, nil
}

// halt stops the parsing goroutine and waits for it.
func (p *Prefetch) halt() {
	p.mu.Lock()
	p.stopped = true
	p.queue = nil
	p.mu.Unlock()
	p.stop()
	<-p.done
}

func (p *Prefetch) run() {
	defer close(p.done)
	loaders := map[string]*fileLoader{}
	for {
		p.mu.Lock()
		var t prefetchTask
		have := len(p.queue) > 0 && !p.stopped
		if have {
			t, p.queue = p.queue[0], p.queue[1:]
		}
		gen := p.gen
		p.mu.Unlock()
		if !have {
			select {
			case <-p.wake:
				continue
			case <-p.ctx.Done():
				return
			}
		}
		fl := loaders[t.root]
		if fl == nil {
			root, err := os.OpenRoot(t.root)
			if err != nil {
				continue
			}
			p.mu.Lock()
			p.roots[t.root] = root
			p.mu.Unlock()
			fl = &fileLoader{fsys: root.FS(), elide: p.opts.ElideHeavy}
			loaders[t.root] = fl
		}
		before, err := fs.Stat(fl.fsys, t.name)
		if err != nil || !before.Mode().IsRegular() {
			continue
		}
		docs, n, err := fl.loadFile(p.ctx, t.name, t.name)
		after, serr := fs.Stat(fl.fsys, t.name)
		if err != nil || serr != nil || !sameFile(before, after) {
			continue // Load parses it again (and reports its errors with the right names)
		}
		p.mu.Lock()
		if gen == p.gen && p.results != nil {
			p.results[t.name] = prefetchResult{docs: docs, n: n, info: after}
		}
		p.mu.Unlock()
	}
}

// sameFile reports whether a and b describe the same file with the same content
// as far as its metadata tells.
func sameFile(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// Load stops the prefetcher and loads the catalog rooted at dir, as LoadDir
// does, with the prefetched documents that still hold.
func (p *Prefetch) Load(ctx context.Context, dir string) (*Catalog, error) {
	p.halt()
	p.mu.Lock()
	results := p.results
	p.results = nil
	p.mu.Unlock()
	var reused int
	var mu sync.Mutex
	pre := func(fsys fs.FS, name string, elide bool) ([]parsedDoc, int64, bool) {
		r, ok := results[name]
		if !ok || elide != p.opts.ElideHeavy {
			return nil, 0, false
		}
		now, err := fs.Stat(fsys, name)
		if err != nil || !sameFile(r.info, now) {
			return nil, 0, false
		}
		mu.Lock()
		reused++
		mu.Unlock()
		return r.docs, r.n, true
	}
	c, err := loadDir(ctx, dir, p.opts, pre)
	if err != nil {
		return nil, err
	}
	p.reused = reused
	if p.opts.Logger != nil {
		p.opts.Logger.Debug("catalog files parsed while extracted", "reused", reused, "prefetched", len(results))
	}
	return c, nil
}
