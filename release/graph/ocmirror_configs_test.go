package graph

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
)

// TestOCMirrorReleaseConfigs loads every configuration of oc-mirror's own
// repository that has a platform stanza (imageset/testdata/oc-mirror) and
// chooses its channels against the test update service. Each outcome is in a
// golden file: the releases chosen, a payload named directly (not Choose's
// work), or the error (a refusal oc-mirror makes too, or a difference that
// docs/releases.md explains).
func TestOCMirrorReleaseConfigs(t *testing.T) {
	s := cincinnatitest.New(t)
	root := filepath.Join("..", "..", "imageset", "testdata", "oc-mirror")
	var out bytes.Buffer
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml") {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Contains(data, []byte("platform:")) {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, root+string(filepath.Separator)))
		var pl *imageset.Platform
		field := "mirror.platform"
		if bytes.Contains(data, []byte("kind: DeleteImageSetConfiguration")) {
			c, lerr := imageset.LoadDeleteFile(p)
			err, field = lerr, "delete.platform"
			if c != nil {
				pl = c.Delete.Platform
			}
		} else {
			c, lerr := imageset.LoadFile(p)
			err = lerr
			if c != nil {
				pl = c.Mirror.Platform
			}
		}
		note := ""
		if err != nil && !strings.Contains(err.Error(), ".platform") && !strings.Contains(err.Error(), "apiVersion") {
			// Refused for another stanza: choose its platform stanza alone.
			first, _, _ := strings.Cut(err.Error(), "\n")
			note = " (the platform stanza alone: the file is refused for " + strings.TrimSpace(strings.TrimPrefix(first, p+":")) + ")"
			pl, err = platformAlone(data, field)
		}
		switch {
		case err != nil:
			counts["not loaded"]++
			first, _, _ := strings.Cut(err.Error(), "\n")
			fmt.Fprintf(&out, "%s: not loaded: %s\n", rel, strings.TrimPrefix(first, p+":"))
			return nil
		case pl == nil || len(pl.Channels) == 0 && pl.Release == "":
			counts["no release"]++
			fmt.Fprintf(&out, "%s: loads, selects no release%s\n", rel, note)
			return nil
		case pl.Release != "":
			counts["payload named"]++
			fmt.Fprintf(&out, "%s: loads, names the payload %s (no graph)%s\n", rel, pl.Release, note)
			return nil
		}
		got, err := Choose(context.Background(), pl, NewClient(ClientOptions{URL: s.URL, Retry: fastRetry}), ChooseOptions{Field: field})
		if err != nil {
			counts["refused by Choose"]++
			fmt.Fprintf(&out, "%s: loads, Choose refuses: %s%s\n", rel, strings.ReplaceAll(err.Error(), "\n", "\n    "), note)
			return nil
		}
		counts["chosen"]++
		var vs []string
		for _, r := range got.Releases {
			vs = append(vs, r.Arch+"/"+r.Version)
		}
		if len(vs) > 8 {
			vs = append(vs[:4], append([]string{"…"}, vs[len(vs)-3:]...)...)
		}
		fmt.Fprintf(&out, "%s: loads, chooses %d releases (%s), %d risks%s\n", rel, len(got.Releases), strings.Join(vs, " "), len(got.Risks), note)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&out, "# %d chosen, %d refused by Choose, %d name a payload, %d select no release, %d not loaded\n",
		counts["chosen"], counts["refused by Choose"], counts["payload named"], counts["no release"], counts["not loaded"])
	if counts["chosen"] < 20 {
		t.Errorf("only %d configurations chosen", counts["chosen"])
	}
	golden.Check(t, filepath.Join("testdata", "ocmirror-configs.golden"), out.Bytes())
}

// platformAlone loads the platform stanza of a configuration without the
// rest of it.
func platformAlone(data []byte, field string) (*imageset.Platform, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	spec, _ := doc[strings.TrimSuffix(field, ".platform")].(map[string]any)
	alone, err := yaml.Marshal(map[string]any{"apiVersion": imageset.APIVersion, "kind": imageset.KindImageSetConfiguration,
		"mirror": map[string]any{"platform": spec["platform"]}})
	if err != nil {
		return nil, err
	}
	c, err := imageset.Load(bytes.NewReader(alone), "platform")
	if err != nil {
		return nil, err
	}
	return c.Mirror.Platform, nil
}
