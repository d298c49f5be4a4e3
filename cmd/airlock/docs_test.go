package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The docs test: every `$ airlock …` line of a fenced block in README.md and
// docs/*.md names a command that exists, with flags it has (so that a renamed
// flag or command fails the tests), and the lines of the pages in docRuns are
// run against the demo registries, in order, each exiting as the page shows,
// with the output lines the page shows (their shape: numbers, digests and
// column widths aside). The convention is in docs/development.md.

// docCommand is one `$ airlock …` line of a fenced block and the output the
// page shows under it.
type docCommand struct {
	file   string
	line   int
	text   string   // the line after "$ airlock ", continuation lines joined
	args   []string // its words, without redirections, "&" and a trailing comment
	output []string // the lines shown under it, up to the next "$ " line or the fence's end
	skip   string   // the reason given by a docs-test: skip marker before the fence
}

// docSkipMarker, on the line before a fence, exempts the block's lines from
// being run (they are still checked against the commands and flags):
// <!-- docs-test: skip REASON -->.
var docSkipMarker = regexp.MustCompile(`^<!-- docs-test: skip (.+) -->$`)

// readDocCommands reads the `$ airlock` lines of the fenced blocks of r.
func readDocCommands(file string, r io.Reader) ([]docCommand, error) {
	var cmds []docCommand
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	in, skip, prev := false, "", ""
	var cur *docCommand
	for n := 1; sc.Scan(); n++ {
		text := sc.Text()
		trimmed := strings.TrimSpace(text)
		if strings.HasPrefix(trimmed, "```") {
			if !in {
				skip = ""
				if m := docSkipMarker.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
					skip = m[1]
				}
			}
			in, cur = !in, nil
			prev = text
			continue
		}
		prev = text
		if !in {
			continue
		}
		if cur != nil && strings.HasSuffix(cur.text, "\\") {
			cur.text = strings.TrimSuffix(cur.text, "\\") + " " + trimmed
			continue
		}
		if strings.HasPrefix(trimmed, "$ ") {
			cur = nil
			if !strings.HasPrefix(trimmed, "$ airlock ") {
				continue
			}
			cmds = append(cmds, docCommand{file: file, line: n, text: strings.TrimPrefix(trimmed, "$ airlock "), skip: skip})
			cur = &cmds[len(cmds)-1]
			continue
		}
		if cur != nil {
			cur.output = append(cur.output, text)
		}
	}
	for i := range cmds {
		args, err := shellWords(cmds[i].text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, cmds[i].line, err)
		}
		cmds[i].args = args
	}
	return cmds, sc.Err()
}

// shellWords splits a documented command line as a shell would, for what the
// docs use: single and double quotes, a trailing "&", redirections and a
// "# comment" are dropped.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quote := false, rune(0)
	flush := func() {
		if inWord {
			words = append(words, w.String())
		}
		w.Reset()
		inWord = false
	}
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '#' && !inWord:
			flush()
			return dropRedirections(words), nil
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	flush()
	return dropRedirections(words), nil
}

func dropRedirections(words []string) []string {
	var out []string
	for i := 0; i < len(words); i++ {
		switch w := words[i]; {
		case w == "&":
		case w == ">" || w == "2>" || w == ">>" || w == "<":
			i++ // and its file
		case strings.HasPrefix(w, ">") || strings.HasPrefix(w, "2>"):
		default:
			out = append(out, w)
		}
	}
	return out
}

// checkDocCommand parses c's words with airlock's own command tree: the
// command must exist and take every flag the line gives.
func checkDocCommand(c docCommand) error {
	root := newRootCmd()
	args := MirrorArgs(root, c.args)
	cmd, rest, err := root.Find(args)
	if err != nil {
		return fmt.Errorf("%s:%d: airlock %s: %v", c.file, c.line, c.text, err)
	}
	if cmd == root || (!cmd.Runnable() && len(rest) > 0) {
		return fmt.Errorf("%s:%d: airlock %s: no such command", c.file, c.line, c.text)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s:%d: airlock %s: %v (airlock %s --help lists its flags)", c.file, c.line, c.text, err, cmd.CommandPath()[len("airlock "):])
	}
	return nil
}

// docPages are README.md and docs/*.md.
func docPages(t *testing.T, repo string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repo, "README.md")}, pages...)
}

func readDocFile(t *testing.T, repo, path string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rel, _ := filepath.Rel(repo, path)
	cmds, err := readDocCommands(rel, f)
	if err != nil {
		t.Fatal(err)
	}
	return cmds
}

// TestDocsCommandLines: every documented `$ airlock` line names an existing
// command and flags it has.
func TestDocsCommandLines(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, page := range docPages(t, repo) {
		for _, c := range readDocFile(t, repo, page) {
			total++
			if err := checkDocCommand(c); err != nil {
				t.Error(err)
			}
		}
	}
	if total < 40 {
		t.Fatalf("only %d documented command lines found: the extraction is broken", total)
	}
}

// TestDocsCheckerCatches: a misspelt flag, a renamed command and a flag of
// another command fail the check; the same lines spelt right pass.
func TestDocsCheckerCatches(t *testing.T) {
	page := "text\n<!-- docs-test: skip an example -->\n```\n" +
		"$ airlock mirror -c isc.yaml file://archive --src-tls-verify=false --log-level warn\n" +
		"mirror-to-disk summary\n" +
		"$ airlock mirror -c isc.yaml file://archive --src-tls-verfy=false\n" +
		"$ airlock catalog prnue -c isc.yaml ./catalog\n" +
		"$ airlock archive verify --dest-tls-verify=false /media/usb/mirror\n" +
		"$ airlock registry seed --registry 127.0.0.1:5000 \\\n    --catalog-dir 'my dir' # a comment\n" +
		"$ airlock registry serve --root ./reg --addr 127.0.0.1:0 &\n" +
		"```\n"
	cmds, err := readDocCommands("page.md", strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) != 6 {
		t.Fatalf("%d commands read, want 6: %+v", len(cmds), cmds)
	}
	if cmds[0].skip != "an example" || strings.Join(cmds[0].output, "|") != "mirror-to-disk summary" {
		t.Errorf("first command: skip %q, output %q", cmds[0].skip, cmds[0].output)
	}
	if got := strings.Join(cmds[4].args, "|"); got != "registry|seed|--registry|127.0.0.1:5000|--catalog-dir|my dir" {
		t.Errorf("continued, quoted, commented line read as %q", got)
	}
	for i, want := range []string{"", "unknown flag: --src-tls-verfy", "no such command", "unknown flag: --dest-tls-verify", "", ""} {
		err := checkDocCommand(cmds[i])
		switch {
		case want == "" && err != nil:
			t.Errorf("line %d: %v", cmds[i].line, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("line %d (%s): got %v, want an error saying %q", cmds[i].line, cmds[i].text, err, want)
		}
	}
}

// docRuns are the pages whose `$ airlock` lines are run, in order, against the
// demo registries of demoRegistries (the source seeded with the demo catalog,
// an empty mirror), with what the page's example names replaced by the test's.
var docRuns = []struct {
	page string
	// places maps what the page writes to the test's: "SRC", "DST", "TMP" and
	// "REPO" are replaced by the source and mirror hosts, the test's folder and
	// the repository.
	places []string
	// end ends a command's output: what follows is the page's own (a script's
	// step headers, files it lists).
	end *regexp.Regexp
}{
	{"docs/demo.md", []string{
		"/tmp/progdemo2/imageset.yaml", "TMP/isc.yaml",
		"/tmp/progdemo2", "TMP",
		"/work/wt-progress", "REPO",
		"127.0.0.1:36079", "SRC",
		"127.0.0.1:37019", "DST",
	}, regexp.MustCompile(`^(==> |ImageSetConfiguration \(|source registry stopped)`)},
}

var (
	shapeHex    = regexp.MustCompile(`[0-9a-f]{12,}`)
	shapeNumber = regexp.MustCompile(`[0-9]+(\.[0-9]+)?`)
	shapeSpace  = regexp.MustCompile(`\s+`)
)

// shape is what of an output line must match the page: digests, numbers and
// column widths may differ.
func shape(s string) string {
	s = shapeHex.ReplaceAllString(s, "H")
	s = shapeNumber.ReplaceAllString(s, "N")
	return strings.TrimSpace(shapeSpace.ReplaceAllString(s, " "))
}

// TestDocsRun runs the pages of docRuns: each line must exit 0 and print (on
// stdout or stderr) every output line the page shows under it, in shape.
func TestDocsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two registries and the documented command lines")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range docRuns {
		t.Run(run.page, func(t *testing.T) {
			cmds := readDocFile(t, repo, filepath.Join(repo, run.page))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			tmp, src, dst := demoRegistries(ctx, t, repo)
			var pairs []string
			for i := 0; i < len(run.places); i += 2 {
				to := strings.NewReplacer("SRC", src.host, "DST", dst.host, "TMP", tmp, "REPO", repo).Replace(run.places[i+1])
				pairs = append(pairs, run.places[i], to)
			}
			places := strings.NewReplacer(pairs...)
			ran, compared := 0, 0
			for _, c := range cmds {
				if c.skip != "" || (len(c.args) >= 2 && c.args[0] == "registry" && c.args[1] == "serve") {
					continue // not run (marked), or the registries the test started
				}
				args := make([]string, len(c.args))
				for i, a := range c.args {
					args[i] = places.Replace(a)
				}
				out, serr, err := runCmd(ctx, args...)
				if err != nil {
					t.Fatalf("%s:%d: airlock %s\nfailed: %v\n%s%s", c.file, c.line, strings.Join(args, " "), err, out, serr)
				}
				ran++
				got := map[string]bool{}
				for _, l := range strings.Split(out+serr, "\n") {
					got[shape(l)] = true
				}
				for _, want := range c.output {
					if run.end != nil && run.end.MatchString(want) {
						break
					}
					w := shape(places.Replace(want))
					if w == "" || w == "…" {
						continue
					}
					compared++
					if !got[w] {
						t.Errorf("%s:%d: airlock %s: the page shows %q, the command printed no such line:\n%s%s", c.file, c.line, c.text, strings.TrimSpace(want), out, serr)
					}
				}
			}
			if ran == 0 || compared == 0 {
				t.Fatalf("%s: %d command lines run, %d output lines compared", run.page, ran, compared)
			}
			t.Logf("%s: %d command lines run, %d output lines compared", run.page, ran, compared)
		})
	}
}
