package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The docs test: every `$ airlock …` line of a fenced block in README.md and
// docs/*.md names a command that exists, with flags it has (so that a renamed
// flag or command fails the tests), and the lines of the pages in docRuns are
// run against the demo registries, in order, each exiting as the page shows,
// with the output lines the page shows (their shape: numbers, digests and
// column widths aside). The convention is in docs/development.md.

// docCommand is one airlock command line of a fenced block and the output the
// page shows under it: a `$ airlock …` line (or `$ VAR=value airlock …`, or
// `$ rm -r DIR && airlock …`), or an `airlock …` line of a sh block.
type docCommand struct {
	file   string
	line   int
	text   string   // the line after "$ ", continuation lines joined
	args   []string // airlock's words, without redirections, "&", a pipe and a trailing comment
	env    []string // VAR=value words before airlock
	pre    [][]string
	output []string // the lines shown under it, up to the next "$ " line or the fence's end
	skip   string   // the reason given by a docs-test: skip marker before the fence
}

// docSkipMarker, on the line before a fence, exempts the block's lines from
// being run (they are still checked against the commands and flags):
// <!-- docs-test: skip REASON -->.
var docSkipMarker = regexp.MustCompile(`^<!-- docs-test: skip (.+) -->$`)

// docShellBlocks are the fence languages whose every line is a command.
var docShellBlocks = map[string]bool{"sh": true, "bash": true, "shell": true}

// readDocCommands reads the airlock command lines of the fenced blocks of r.
func readDocCommands(file string, r io.Reader) ([]docCommand, error) {
	var lines []docCommand // every "$ " line (and sh line), airlock's or not
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	in, shell, skip, prev := false, false, "", ""
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
				shell = docShellBlocks[strings.TrimPrefix(trimmed, "```")]
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
		if strings.HasPrefix(trimmed, "$ ") || (shell && strings.HasPrefix(trimmed, "airlock ")) {
			lines = append(lines, docCommand{file: file, line: n, text: strings.TrimPrefix(trimmed, "$ "), skip: skip})
			cur = &lines[len(lines)-1]
			if shell {
				cur = nil // a sh block shows no output
				if strings.HasSuffix(trimmed, "\\") {
					cur = &lines[len(lines)-1]
				}
			}
			continue
		}
		if cur != nil && !shell {
			cur.output = append(cur.output, text)
		}
	}
	var cmds []docCommand
	for _, l := range lines {
		words, err := shellWords(l.text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", file, l.line, err)
		}
		// "A && B && …": the airlock parts are commands, what comes
		// before one of them its preparation.
		var pre [][]string
		for len(words) > 0 {
			part := words
			if i := slices.Index(words, "&&"); i >= 0 {
				part, words = words[:i], words[i+1:]
			} else {
				words = nil
			}
			var env []string
			for len(part) > 0 && docEnvWord.MatchString(part[0]) {
				env, part = append(env, part[0]), part[1:]
			}
			if len(part) == 0 || part[0] != "airlock" {
				pre = append(pre, part)
				continue
			}
			c := l
			c.args, c.env, c.pre = part[1:], env, pre
			cmds = append(cmds, c)
			pre = nil
		}
	}
	return cmds, sc.Err()
}

// docEnvWord is a VAR=value word before a command.
var docEnvWord = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*=`)

// shellWords splits a documented command line as a shell would, for what the
// docs use: single and double quotes; a trailing "&", redirections, a pipe
// and what follows it, and a "# comment" are dropped.
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
		case (r == '#' || r == '|') && !inWord:
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
		return fmt.Errorf("%s:%d: %s: %v", c.file, c.line, c.text, err)
	}
	if cmd == root || (!cmd.Runnable() && len(rest) > 0) {
		return fmt.Errorf("%s:%d: %s: no such command", c.file, c.line, c.text)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Errorf("%s:%d: %s: %v (airlock %s --help lists its flags)", c.file, c.line, c.text, err, cmd.CommandPath()[len("airlock "):])
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

// TestInstallInstructions: the build and install lines of the sh blocks of
// README.md and docs/*.md work with this repository: every `make TARGET` is a
// target of the Makefile, every `go build|install ./PKG` a main package, and
// no `go install PKG@VERSION` while go.mod has a replace (go refuses it).
func TestInstallInstructions(t *testing.T) {
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	replaced := regexp.MustCompile(`(?m)^replace\s`).Match(gomod)
	makefile, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, page := range docPages(t, repo) {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, page)
		in := false
		for n, line := range strings.Split(string(b), "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "```") {
				in = !in && docShellBlocks[strings.TrimPrefix(trimmed, "```")]
				continue
			}
			words, _ := shellWords(strings.TrimPrefix(trimmed, "$ "))
			if !in || len(words) < 2 {
				continue
			}
			switch {
			case words[0] == "make":
				checked++
				for _, target := range words[1:] {
					if !strings.Contains(target, "=") && !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(target)+`:`).Match(makefile) {
						t.Errorf("%s:%d: make %s: the Makefile has no target %s", rel, n+1, target, target)
					}
				}
			case words[0] == "go" && (words[1] == "install" || words[1] == "build"):
				checked++
				for _, w := range words[2:] {
					switch {
					case strings.Contains(w, "@") && replaced:
						t.Errorf("%s:%d: %s: go.mod has a replace directive, so go install PKG@VERSION refuses this module: build from a clone (make build, make install)", rel, n+1, trimmed)
					case strings.HasPrefix(w, "./"):
						if main, err := os.ReadFile(filepath.Join(repo, w, "main.go")); err != nil || !strings.Contains(string(main), "package main") {
							t.Errorf("%s:%d: %s: %s is not a main package of this repository", rel, n+1, trimmed, w)
						}
					}
				}
			}
		}
	}
	if checked < 3 {
		t.Fatalf("only %d make/go build lines found in sh blocks: README.md's Install section should have them", checked)
	}
}
