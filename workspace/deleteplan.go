package workspace

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	yaml "go.yaml.in/yaml/v3"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror"
)

// The delete plan: working-dir/delete/delete-images.yaml lists every manifest a
// deletion removes (repository, digest, the tags pointing at it when the plan
// was made, why) and what it keeps because a current selection still wants it.
// Generating a plan also records a copy under working-dir/delete/plans/ named by
// the plan's ID (the SHA-256 of its body); executing a plan checks the file
// against that copy, so a plan edited to name another registry or a manifest
// the planner never chose is refused.

// Plan file constants.
const (
	DeletePlanAPIVersion = "airlock.io/v1alpha1"
	DeletePlanKind       = "DeletePlan"
)

// DeletePlan is delete-images.yaml.
type DeletePlan struct {
	APIVersion string `json:"apiVersion" yaml:"apiVersion"`
	Kind       string `json:"kind" yaml:"kind"`
	// PlanID is "sha256:" + the SHA-256 of the plan with PlanID empty.
	PlanID string `json:"planID" yaml:"planID"`
	// Destination is the registry and namespace the plan deletes from.
	Destination string    `json:"destination" yaml:"destination"`
	Generated   time.Time `json:"generated" yaml:"generated"`
	// Reason is what the plan was made from: "stale" or the delete configuration.
	Reason string `json:"reason" yaml:"reason"`
	// Selections are the current selections a --stale plan counted (the runs
	// whose images it keeps); NotCounted the latest runs of other
	// configuration files, and why (retired, --selections latest).
	Selections []string `json:"selections,omitempty" yaml:"selections,omitempty"`
	NotCounted []string `json:"notCounted,omitempty" yaml:"notCounted,omitempty"`
	// HistoryRun is the last history run the plan saw.
	HistoryRun int `json:"historyRun" yaml:"historyRun"`
	// Manifests are deleted, tags first, then manifests by digest (indexes before
	// their children).
	Manifests []PlannedManifest `json:"manifests" yaml:"manifests"`
	// Kept were candidates the plan keeps, and why.
	Kept []KeptManifest `json:"kept,omitempty" yaml:"kept,omitempty"`
	// AfterDelete says how the registry gets the space back.
	AfterDelete string `json:"afterDelete" yaml:"afterDelete"`
}

// PlannedManifest is one manifest to delete.
type PlannedManifest struct {
	Repository string        `json:"repository" yaml:"repository"`
	Digest     digest.Digest `json:"digest" yaml:"digest"`
	MediaType  string        `json:"mediaType,omitempty" yaml:"mediaType,omitempty"`
	// Tags pointed at Digest when the plan was made; they are deleted first, and
	// the plan is refused if any of them moved meanwhile.
	Tags   []string         `json:"tags,omitempty" yaml:"tags,omitempty"`
	Source string           `json:"source,omitempty" yaml:"source,omitempty"`
	Kind   mirror.ImageKind `json:"kind,omitempty" yaml:"kind,omitempty"`
	// ChildOf is the index this manifest is a platform image of.
	ChildOf digest.Digest `json:"childOf,omitempty" yaml:"childOf,omitempty"`
	Why     []string      `json:"why" yaml:"why"`

	line int
}

// KeptManifest is a manifest the plan could have deleted but keeps.
type KeptManifest struct {
	Repository string        `json:"repository" yaml:"repository"`
	Digest     digest.Digest `json:"digest" yaml:"digest"`
	Source     string        `json:"source,omitempty" yaml:"source,omitempty"`
	Why        []string      `json:"why" yaml:"why"`
}

// AfterDeleteNote is the plan's note on reclaiming space.
const AfterDeleteNote = `Deleting removes manifests and tags; the registry frees their blobs only in its garbage collection:
airlock registry serve: stop it, then airlock registry gc --root DIR (--dry-run first);
CNCF Distribution (registry:2/3): registry garbage-collect /etc/docker/registry/config.yml with the registry read-only or stopped;
Harbor: Administration > Clean Up > GC; Quay: garbage collection runs by itself; Nexus, Artifactory: their cleanup tasks.`

// ID is "sha256:" + the SHA-256 of the plan with PlanID empty.
func (p *DeletePlan) ID() string {
	c := *p
	c.PlanID = ""
	b, _ := marshalPlan(&c)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func marshalPlan(p *DeletePlan) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadDeletePlan decodes a plan file strictly (unknown fields are errors) and
// notes the line of every manifest entry; name is the file's name in errors.
func ReadDeletePlan(r io.Reader, name string) (*DeletePlan, error) {
	data, err := io.ReadAll(io.LimitReader(r, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	p := &DeletePlan{}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := decodeSafely(dec, p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s is empty: give the delete-images.yaml airlock delete --generate wrote", name)
		}
		return nil, fmt.Errorf("%s: %s; give the delete-images.yaml airlock delete --generate wrote, unedited", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if p.Kind != DeletePlanKind || p.APIVersion != DeletePlanAPIVersion {
		return nil, fmt.Errorf("%s is not a delete plan (want apiVersion %s, kind %s): give the delete-images.yaml airlock delete --generate wrote", name, DeletePlanAPIVersion, DeletePlanKind)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err == nil && len(doc.Content) == 1 {
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			if root.Content[i].Value == "manifests" && root.Content[i+1].Kind == yaml.SequenceNode {
				for j, n := range root.Content[i+1].Content {
					if j < len(p.Manifests) {
						p.Manifests[j].line = n.Line
					}
				}
			}
		}
	}
	return p, nil
}

func decodeSafely(dec *yaml.Decoder, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid YAML: %v", r)
		}
	}()
	return dec.Decode(v)
}

// WriteDeletePlan sets the plan's ID and writes the plan to
// working-dir/delete/delete-images.yaml and its record to
// working-dir/delete/plans/HEX.yaml. It returns the plan file's path.
func WriteDeletePlan(d Dir, p *DeletePlan) (string, error) {
	return WriteDeletePlanID(d, p, "")
}

// WriteDeletePlanID is WriteDeletePlan with oc-mirror's --delete-id: the plan
// file is working-dir/delete/delete-images-ID.yaml ("" : delete-images.yaml).
func WriteDeletePlanID(d Dir, p *DeletePlan, id string) (string, error) {
	path, err := DeletePlanPathID(d, id)
	if err != nil {
		return "", err
	}
	p.PlanID = p.ID()
	b, err := marshalPlan(p)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Join(d.DeleteDir(), PlansDirName), 0o755); err != nil {
		return "", err
	}
	if err := atomicfile.WriteFile(recordedPlanPath(d, p.PlanID), b, 0); err != nil {
		return "", err
	}
	return path, atomicfile.WriteFile(path, b, 0)
}

// DeletePlanPathID is delete/delete-images-ID.yaml (oc-mirror's --delete-id),
// delete/delete-images.yaml when id is "".
func DeletePlanPathID(d Dir, id string) (string, error) {
	if id == "" {
		return d.DeletePlanPath(), nil
	}
	if strings.Trim(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" || strings.HasPrefix(id, ".") {
		return "", fmt.Errorf("--delete-id %q: use letters, digits, '.', '_' and '-' (it names the file delete-images-ID.yaml)", id)
	}
	return filepath.Join(d.DeleteDir(), strings.TrimSuffix(DeletePlanFile, ".yaml")+"-"+id+".yaml"), nil
}

func recordedPlanPath(d Dir, id string) string {
	return filepath.Join(d.DeleteDir(), PlansDirName, strings.TrimPrefix(id, "sha256:")+".yaml")
}

// CheckDeletePlan compares the plan file p (named name) with the plan the
// working directory d recorded under its ID, and with the destination the
// command names: every manifest of the file must be one the planner chose,
// with the same tags.
func CheckDeletePlan(p *DeletePlan, name string, d Dir, dest string) error {
	var problems []string
	if !strings.HasPrefix(p.PlanID, "sha256:") || len(p.PlanID) != len("sha256:")+64 || strings.ContainsAny(p.PlanID[7:], "/\\.") {
		return fmt.Errorf("%s: planID %q is not a plan ID airlock wrote; generate a new plan with airlock delete --generate", name, p.PlanID)
	}
	b, err := os.ReadFile(recordedPlanPath(d, p.PlanID))
	if err != nil {
		return fmt.Errorf("%s: plan %s was not generated in the workspace %s (%v): generate the plan there with airlock delete --generate, or give the --workspace it was generated in", name, p.PlanID, d.Workspace(), err)
	}
	rec, err := ReadDeletePlan(bytes.NewReader(b), recordedPlanPath(d, p.PlanID))
	if err != nil {
		return err
	}
	if rec.Destination != dest {
		problems = append(problems, fmt.Sprintf("the plan was made for %s, not %s: run it against docker://%s", rec.Destination, dest, rec.Destination))
	}
	if p.Destination != rec.Destination {
		problems = append(problems, fmt.Sprintf("destination was edited: the plan was made for %s, the file names %s", rec.Destination, p.Destination))
	}
	planned := map[string]PlannedManifest{}
	for _, m := range rec.Manifests {
		planned[ImageKey(m.Repository, m.Digest)] = m
	}
	for _, m := range p.Manifests {
		where := fmt.Sprintf("%s:%d", name, m.line)
		if !strings.HasPrefix(m.Repository, rec.Destination+"/") {
			problems = append(problems, fmt.Sprintf("%s: repository %s is not under %s, the registry the plan was made for (foreign registry)", where, m.Repository, rec.Destination))
			continue
		}
		r, ok := planned[ImageKey(m.Repository, m.Digest)]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %s@%s was never planned: plan %s does not delete it", where, m.Repository, m.Digest, p.PlanID))
			continue
		}
		if !equalStrings(r.Tags, m.Tags) {
			problems = append(problems, fmt.Sprintf("%s: the tags of %s@%s were edited: the plan deletes tags [%s], the file says [%s]", where, m.Repository, m.Digest, strings.Join(r.Tags, ", "), strings.Join(m.Tags, ", ")))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s differs from the plan airlock generated:\n  - %s\nnothing was deleted; generate a new plan with airlock delete --generate and review it (removing entries is allowed, adding or changing them is not)", ErrPlanRefused, name, strings.Join(problems, "\n  - "))
	}
	// Fewer manifests than planned is fine: a reviewer may keep more.
	return nil
}

func equalStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// ErrPlanRefused is wrapped by the errors of a plan that is not executed: edited,
// foreign, or made before the registry changed.
var ErrPlanRefused = errors.New("delete plan refused")
