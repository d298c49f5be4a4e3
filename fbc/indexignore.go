package fbc

import (
	"bufio"
	"bytes"
	"path"
	"strings"
)

// ignoreMatcher applies the patterns of every .indexignore file of a catalog with
// gitignore semantics (as opm does through go-git's matcher): each file's
// patterns are relative to its directory; a pattern without a slash (other than
// a trailing one) matches a name at any depth below that directory; a pattern
// with a slash is anchored there; "**" spans directories; a trailing "/"
// matches directories only (and so every file below them); "!" re-includes; the
// last matching pattern wins, deeper .indexignore files being consulted first.
type ignoreMatcher struct {
	patterns []ignorePattern
}

type ignorePattern struct {
	domain   []string // directory of the .indexignore, as path segments
	segments []string // the pattern split at "/"
	negate   bool
	dirOnly  bool
	anchored bool // the pattern contains a slash: match from the domain root
}

// add parses the content of the .indexignore file in directory dir ("." for the root).
func (m *ignoreMatcher) add(dir string, data []byte) {
	var domain []string
	if dir != "." && dir != "" {
		domain = strings.Split(dir, "/")
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := ignorePattern{domain: domain}
		if strings.HasPrefix(line, "!") {
			p.negate = true
			line = line[1:]
		} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly = true
			line = strings.TrimSuffix(line, "/")
		}
		if line == "" {
			continue
		}
		p.anchored = strings.Contains(line, "/")
		line = strings.TrimPrefix(line, "/")
		p.segments = strings.Split(line, "/")
		m.patterns = append(m.patterns, p)
	}
}

// ignored reports whether the file at slash-separated path name is excluded.
func (m *ignoreMatcher) ignored(name string) bool {
	segs := strings.Split(name, "/")
	for i := len(m.patterns) - 1; i >= 0; i-- {
		if m.patterns[i].match(segs) {
			return !m.patterns[i].negate
		}
	}
	return false
}

// match reports whether the pattern matches the file whose path segments are segs.
func (p *ignorePattern) match(segs []string) bool {
	if len(segs) <= len(p.domain) {
		return false
	}
	for i, d := range p.domain {
		if segs[i] != d {
			return false
		}
	}
	rel := segs[len(p.domain):]
	if !p.anchored {
		for i, s := range rel {
			if ok, _ := path.Match(p.segments[0], s); ok {
				// The last segment is the file itself: a dir-only pattern cannot match it.
				return !(p.dirOnly && i == len(rel)-1)
			}
		}
		return false
	}
	return globMatch(p.segments, rel, p.dirOnly)
}

// globMatch matches pattern segments against path segments. A pattern that
// matches a leading part of the path (a directory) matches the whole path.
func globMatch(pat, rel []string, dirOnly bool) bool {
	if len(pat) == 0 {
		// The pattern matched a proper prefix (a directory), or the whole path
		// (the file itself, which a dir-only pattern cannot match).
		return len(rel) > 0 || !dirOnly
	}
	if pat[0] == "**" {
		if len(pat) == 1 {
			return len(rel) > 0
		}
		for k := 0; k <= len(rel); k++ {
			if globMatch(pat[1:], rel[k:], dirOnly) {
				return true
			}
		}
		return false
	}
	if len(rel) == 0 {
		return false
	}
	if ok, _ := path.Match(pat[0], rel[0]); !ok {
		return false
	}
	if len(pat) == 1 {
		// Matched the last pattern segment against rel[0].
		if len(rel) == 1 {
			return !dirOnly
		}
		return true
	}
	return globMatch(pat[1:], rel[1:], dirOnly)
}
