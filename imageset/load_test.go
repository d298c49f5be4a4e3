package imageset

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

type wantErr struct {
	line int
	sub  string
	// notSupported: the problem wraps ErrNotSupported instead of ErrInvalid.
	notSupported bool
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		file string
		want []wantErr
	}{
		{"unknown-field.yaml", []wantErr{{8, `mirror.operators[0].packages[0].minversion: unknown field "minversion"; did you mean minVersion?`, false}}},
		{"unknown-field-nohint.yaml", []wantErr{{6, `unknown field "colour"; valid fields here are: catalog, full, packages`, false}}},
		{"misplaced-field.yaml", []wantErr{{6, `minVersion belongs in a package (packages[].minVersion) or a channel`, false}}},
		{"v1-storageconfig.yaml", []wantErr{{3, `storageConfig: unknown field "storageConfig": storageConfig is an oc-mirror v1`, false}}},
		{"bad-json.json", []wantErr{{6, `mirror.operators[0].packges: unknown field "packges"; did you mean packages?`, false}}},
		{"blocked-extra-field.yaml", []wantErr{{6, `mirror.blockedImages[0].targetTag: unknown field "targetTag"; valid fields here are: name`, false}}},
		{"duplicate-key.yaml", []wantErr{{6, `field catalog is set twice (first on line 5)`, false}}},

		{"wrong-type-string-for-list.yaml", []wantErr{{6, `mirror.operators[0].packages: expected a list, got the string "foo"`, false}}},
		{"wrong-type-map-for-list.yaml", []wantErr{{5, `mirror.operators: expected a list, got a mapping; start the entry with "- "`, false}}},
		{"wrong-type-scalar-for-map.yaml", []wantErr{{7, `mirror.operators[0].packages[0]: expected a mapping, got the string "foo"; write it as "name: foo"`, false}}},
		{"wrong-type-bool.yaml", []wantErr{{6, `mirror.operators[0].full: expected true or false, got the string "yes"`, false}}},
		{"wrong-type-int.yaml", []wantErr{{3, `archiveSize: expected a whole number, got the string "20"`, false}}},
		{"wrong-type-list-for-string.yaml", []wantErr{{5, `mirror.operators[0].catalog: expected a string, got a list`, false}}},

		{"missing-kind.yaml", []wantErr{{1, `kind: kind is missing; add "kind: ImageSetConfiguration"`, false}}},
		{"other-kind.yaml", []wantErr{{2, `expected kind ImageSetConfiguration, got the string "DeleteImageSetConfiguration"`, false}}},
		{"foreign-kind.yaml", []wantErr{{2, `expected kind ImageSetConfiguration, got the string "ConfigMap"; set "kind: ImageSetConfiguration"`, false}}},
		{"missing-apiversion.yaml", []wantErr{{1, `apiVersion: apiVersion is missing; add "apiVersion: mirror.openshift.io/v2alpha1"`, false}}},
		{"v1alpha2.yaml", []wantErr{{1, `apiVersion "mirror.openshift.io/v1alpha2" is the oc-mirror v1 format`, false}}},
		{"missing-mirror.yaml", []wantErr{{1, `mirror: the stanza is missing; add "mirror:"`, false}}},
		{"delete-in-isc.yaml", []wantErr{{4, `delete: not allowed in an ImageSetConfiguration`, false}}},

		{"bad-semver.yaml", []wantErr{{12, `mirror.operators[0].packages[2].channels[0].minVersion: minVersion "1.2" is not a valid semantic version (no Major.Minor.Patch elements found); use a full version like 1.2.0`, false}}},
		{"bad-semver-v.yaml", []wantErr{{8, `maxVersion "v2.0.0" is not a valid semantic version`, false}}},
		{"min-gt-max.yaml", []wantErr{{8, `minVersion 2.0.0 is greater than maxVersion 1.5.0`, false}}},
		{"mixed-ranges.yaml", []wantErr{{11, `channels[0].maxVersion: package "a" has a package-level minVersion/maxVersion and channel "stable" has its own`, false}}},
		{"full-with-range.yaml", []wantErr{{9, `packages[0].minVersion: full: true keeps every bundle, so a version range means nothing`, false}}},
		{"duplicate-catalog.yaml", []wantErr{{6, `mirror.operators[1].catalog: duplicate catalog: same target quay.io/example/catalog:v1 as mirror.operators[0] (line 5)`, false}}},
		{"duplicate-catalog-targettag.yaml", []wantErr{{7, `duplicate catalog: same target quay.io/example/catalog:pruned as mirror.operators[0] (line 5)`, false}}},
		{"duplicate-package.yaml", []wantErr{{9, `packages[2].name: duplicate package "a": already listed as mirror.operators[0].packages[0] (line 7)`, false}}},
		{"duplicate-channel.yaml", []wantErr{{10, `channels[1].name: duplicate channel "stable": already listed as mirror.operators[0].packages[0].channels[0] (line 9)`, false}}},
		{"bundles-with-range.yaml", []wantErr{{10, `packages[0].bundles: bundles selects exact bundles and cannot be combined with minVersion/maxVersion`, false}}},
		{"default-channel-not-listed.yaml", []wantErr{{8, `defaultChannel "fast" is not one of the listed channels`, false}}},
		{"bad-blocked-regex.yaml", []wantErr{{5, `mirror.blockedImages[0].name: invalid regular expression "quay.io/(foo": missing closing )`, false}}},
		{"empty-names.yaml", []wantErr{
			{5, `mirror.operators[0].catalog: catalog is empty`, false},
			{8, `mirror.operators[1].packages[0].name: package name is empty`, false},
			{10, `mirror.operators[1].packages[0].channels[0].name: channel name is empty`, false},
			{12, `mirror.additionalImages[0].name: image name is empty`, false},
		}},
		{"bad-catalog-ref.yaml", []wantErr{{5, `invalid catalog reference "quay.io/Example/Catalog:v1": invalid reference format: repository name (Example/Catalog) must be lowercase`, false}}},
		{"catalog-no-tag.yaml", []wantErr{{5, `catalog "quay.io/example/catalog" has neither a tag nor a digest`, false}}},
		{"catalog-oci-empty.yaml", []wantErr{{5, `catalog "oci://" has no path`, false}}},
		{"bad-additional-image.yaml", []wantErr{{6, `mirror.additionalImages[1].name: invalid image reference "quay.io/example/app::1.0"`, false}}},
		{"bad-target-catalog.yaml", []wantErr{{6, `targetCatalog "my-ns/catalog:v2" must not contain a tag; put the tag in targetTag`, false}}},
		{"bad-target-tag.yaml", []wantErr{{6, `targetTag "-bad/tag" is not a valid tag`, false}}},

		{"bad-platform.yaml", []wantErr{
			{6, `mirror.platform.channels: release names one payload and channels choose payloads`, false},
			{7, `mirror.platform.channels[0].minVersion: minVersion "4.16" is not a valid semantic version`, false},
			{9, `mirror.platform.channels[1].type: unknown channel type "okb" (did you mean okd?); use ocp (OpenShift, the default) or okd`, false},
			{10, `mirror.platform.channels[1].minVersion: minVersion 4.15.10 is greater than maxVersion 4.15.2`, false},
			{12, `mirror.platform.channels[2].name: duplicate channel "stable-4.16": already listed as mirror.platform.channels[0] (line 6)`, false},
			{13, `mirror.platform.channels[3].name: channel name is empty`, false},
			{16, `mirror.platform.architectures[1]: unknown architecture "x86_64" (did you mean amd64?)`, false},
			{17, `mirror.platform.architectures[2]: architecture amd64 is listed twice`, false},
			{19, `mirror.platform.platforms: platforms and architectures cannot be used together`, false},
			{20, `mirror.platform.release: release "quay.io/openshift-release-dev/ocp-release" has neither a tag nor a digest`, false},
		}},
		{"unsupported-helm.yaml", []wantErr{{5, `mirror.helm: not supported yet`, true}}},
		{"unsupported-samples.yaml", []wantErr{{5, `mirror.samples: not supported yet`, true}}},
		{"bad-platforms.yaml", []wantErr{
			{6, `mirror.operators[0].platforms: platforms is empty: list at least one platform`, false},
			{10, `mirror.operators[1].platforms[0].architecture: unknown architecture "x86_64" (did you mean amd64?)`, false},
			{13, `mirror.operators[1].platforms[2]: platform linux/amd64 is listed twice (also mirror.operators[1].platforms[1], line 11)`, false},
			{14, `mirror.operators[1].platforms[3]: architecture is missing`, false},
			{18, `mirror.additionalImages[0].platforms[0].os: unknown os "linus" (did you mean linux?)`, false},
			{21, `mirror.additionalImages[0].platforms[1].architecture: unknown architecture "multi" (for every platform, remove platforms)`, false},
			{24, `mirror.additionalImages[0].platforms[2].variant: unknown field "variant"`, false},
			{26, `mirror.additionalImages[1].platforms: platforms is empty`, false},
		}},

		{"many-errors.yaml", []wantErr{
			{3, `archiveSize must not be negative`, false},
			{9, `minVersion "1" is not a valid semantic version (no Major.Minor.Patch elements found); use a full version like 1.0.0`, false},
			{13, `maxVersion "banana" is not a valid semantic version`, false},
			{15, `invalid regular expression "*"`, false},
		}},
		{"syntax-error.yaml", []wantErr{{6, `invalid YAML: did not find expected key (in the block starting on line 3)`, false}}},
		{"empty.yaml", []wantErr{{0, `the file is empty; it must hold an ImageSetConfiguration`, false}}},
		{"two-docs.yaml", []wantErr{{4, `more than one YAML document`, false}}},
		{"not-a-mapping.yaml", []wantErr{{1, `expected a mapping with apiVersion, kind and mirror, got a list`, false}}},

		// DeleteImageSetConfiguration files (loaded with LoadDelete).
		{"delete-with-mirror.yaml", []wantErr{{3, `mirror: not allowed in a DeleteImageSetConfiguration`, false}}},
		{"delete-duplicate-catalog.yaml", []wantErr{{7, `delete.operators[2].catalog: duplicate catalog: same target docker.io/example/catalog:v1 as delete.operators[1] (line 6)`, false}}},
		{"delete-bad-platform.yaml", []wantErr{
			{6, `delete.platform.architectures[0]: unknown architecture "s390" (did you mean s390x?)`, false},
			{9, `delete.platform.channels[0].maxVersion: maxVersion "4.16.x" is not a valid semantic version`, false},
		}},
		{"delete-archivesize.yaml", []wantErr{{3, `archiveSize: unknown field "archiveSize" here`, false}}},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		seen[tt.file] = true
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join("testdata", "invalid", tt.file)
			var err error
			if strings.HasPrefix(tt.file, "delete-") && tt.file != "delete-in-isc.yaml" {
				_, err = LoadDeleteFile(path)
			} else {
				_, err = LoadFile(path)
			}
			if err == nil {
				t.Fatal("loaded without error")
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T, not Errors: %v", err, err)
			}
			if len(es) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%v", len(es), len(tt.want), err)
			}
			lines := strings.Split(err.Error(), "\n")
			for i, w := range tt.want {
				prefix := path + ":"
				if w.line > 0 {
					prefix += strconv.Itoa(w.line) + ":"
				}
				if !strings.HasPrefix(lines[i], prefix) {
					t.Errorf("problem %d = %q, want prefix %q", i, lines[i], prefix)
				}
				if !strings.Contains(lines[i], w.sub) {
					t.Errorf("problem %d = %q, want it to contain %q", i, lines[i], w.sub)
				}
				if es[i].Line != w.line {
					t.Errorf("problem %d: Line = %d, want %d", i, es[i].Line, w.line)
				}
				wantCause := ErrInvalid
				if w.notSupported {
					wantCause = ErrNotSupported
				}
				if !errors.Is(es[i], wantCause) {
					t.Errorf("problem %d does not wrap %v", i, wantCause)
				}
			}
		})
	}
	// Every file under testdata/invalid must be covered by the table.
	files, _ := filepath.Glob("testdata/invalid/*")
	for _, f := range files {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s has no test case", f)
		}
	}
}

func TestLoadValidOCMirrorV2(t *testing.T) {
	c, err := LoadFile("testdata/valid/oc-mirror-v2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := &ImageSetConfiguration{
		TypeMeta:    TypeMeta{APIVersion: APIVersion, Kind: KindImageSetConfiguration},
		ArchiveSize: 4,
		Source:      "testdata/valid/oc-mirror-v2.yaml",
		Mirror: ImageSetConfigurationSpec{
			Operators: []Operator{
				{
					Catalog:       "registry.redhat.io/redhat/redhat-operator-index:v4.18",
					TargetCatalog: "my-ns/redhat-operator-index",
					TargetTag:     "v4.18-pruned",
					Line:          7,
					Packages: []IncludePackage{
						{Name: "aws-load-balancer-operator", Line: 11},
						{Name: "3scale-operator", Line: 12, Channels: []IncludeChannel{
							{Name: "threescale-2.13", Line: 14, IncludeBundle: IncludeBundle{MinVersion: "0.10.0", MaxVersion: "0.11.0"}},
						}},
						{Name: "node-observability-operator", DefaultChannel: "stable", Line: 17, IncludeBundle: IncludeBundle{MinVersion: "0.2.0"}},
						{Name: "cluster-logging", Line: 20, Channels: []IncludeChannel{{Name: "stable-6.1", Line: 22}}},
					},
				},
				{Catalog: "registry.redhat.io/redhat/certified-operator-index:v4.18", Full: true, Line: 23},
				{Catalog: "oci:///home/user/catalogs/my-catalog", SkipDependencies: true, TargetCatalogSourceTemplate: "/home/user/catalogsource-template.yaml", Line: 25},
			},
			AdditionalImages: []Image{
				{Name: "registry.redhat.io/ubi8/ubi:latest", Line: 29},
				{Name: "quay.io/example/app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", TargetRepo: "apps/app", TargetTag: "v1", Line: 30},
				{Name: "docker://quay.io/example/tool:1.0", Line: 33},
			},
			BlockedImages: []Image{
				{Name: `^registry\.redhat\.io/ubi8/ubi-minimal`, Line: 35},
				{Name: `.*/alertmanager.*`, Line: 36},
			},
		},
	}
	if !reflect.DeepEqual(c, want) {
		got, _ := json.MarshalIndent(c, "", " ")
		t.Fatalf("got\n%s", got)
	}
	if c.ArchiveSizeBytes() != 4<<30 {
		t.Errorf("ArchiveSizeBytes = %d", c.ArchiveSizeBytes())
	}
	if !c.Mirror.Operators[0].HasRange() || c.Mirror.Operators[1].HasRange() {
		t.Error("HasRange wrong")
	}
	if !c.Mirror.Operators[1].IsFullCatalog() || c.Mirror.Operators[0].IsFullCatalog() {
		t.Error("IsFullCatalog wrong")
	}
	o := c.Mirror.Operators[2]
	if !o.IsOCI() || o.OCIPath() != "/home/user/catalogs/my-catalog" || o.CatalogRef() != "" {
		t.Errorf("oci helpers: %v %q %q", o.IsOCI(), o.OCIPath(), o.CatalogRef())
	}
	if c.Mirror.AdditionalImages[2].Ref() != "quay.io/example/tool:1.0" {
		t.Errorf("Ref = %q", c.Mirror.AdditionalImages[2].Ref())
	}
	res, err := c.BlockedPatterns()
	if err != nil || len(res) != 2 || !res[0].MatchString("registry.redhat.io/ubi8/ubi-minimal:8") || res[0].MatchString("registry.redhat.io/ubi8/ubi:8") {
		t.Errorf("BlockedPatterns = %v, %v", res, err)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate after Load: %v", err)
	}
}

func TestLoadValidFiles(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*")
	if len(files) < 4 {
		t.Fatalf("only %d valid files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if strings.HasPrefix(filepath.Base(f), "delete") {
				c, err := LoadDeleteFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if len(c.Delete.Operators) == 0 || c.Delete.Operators[0].Line == 0 || c.Kind != KindDeleteImageSetConfiguration {
					t.Errorf("unexpected result %+v", c)
				}
				// A delete config is not a mirror config.
				if _, err := LoadFile(f); err == nil || !strings.Contains(err.Error(), "expected kind ImageSetConfiguration") {
					t.Errorf("Load of a delete config: %v", err)
				}
				return
			}
			c, err := LoadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if c.Kind != KindImageSetConfiguration || c.APIVersion != APIVersion || c.Source != f {
				t.Errorf("header %+v source %q", c.TypeMeta, c.Source)
			}
			if _, err := LoadDeleteFile(f); err == nil || !strings.Contains(err.Error(), "expected kind DeleteImageSetConfiguration") {
				t.Errorf("LoadDelete of a mirror config: %v", err)
			}
			checkRoundTrip(t, c)
		})
	}
}

func TestLoadJSON(t *testing.T) {
	c, err := LoadFile("testdata/valid/config.json")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Mirror.Operators[0].Packages
	if c.ArchiveSize != 20 || len(p) != 2 || p[0].Channels[0].MinVersion != "1.0.0" || p[1].SelectedBundles[0].Name != "bar.v1.2.3" {
		t.Errorf("unexpected %+v", c)
	}
	if p[1].Line != 11 || p[0].Channels[0].Line != 10 {
		t.Errorf("lines %d %d", p[1].Line, p[0].Channels[0].Line)
	}
}

func TestLoadInline(t *testing.T) {
	const head = "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\n"
	tests := []struct {
		name, body string
		err        string // "" for success
	}{
		{"empty mirror", "mirror: {}\n", ""},
		{"null mirror", "mirror:\n", ""},
		{"empty lists", "mirror:\n  operators: []\n  additionalImages: []\n", ""},
		{"number as tag", "mirror:\n  additionalImages:\n  - name: quay.io/a/b:1.0\n    targetTag: 4.10\n", ""},
		{"anchors", "x: &img\n  name: quay.io/a/b:1\nmirror: {}\n", `unknown field "x"`},
		{"alias", "mirror:\n  additionalImages:\n  - &i {name: quay.io/a/b:1}\n  - *i\n", ""},
		{"merge key", "mirror:\n  additionalImages:\n  - &i {name: quay.io/a/b:1}\n  - <<: *i\n", "merge keys"},
		{"bool for string", "mirror:\n  additionalImages:\n  - name: true\n", `put it in quotes ("true")`},
		{"quoted bool", "mirror:\n  operators:\n  - catalog: quay.io/a/b:1\n    full: \"true\"\n", "remove the quotes"},
		{"float size", "archiveSize: 1.5\nmirror: {}\n", "expected a whole number, got the number 1.5"},
		{"huge size", "archiveSize: 99999999999\nmirror: {}\n", "archiveSize 99999999999 is larger than"},
		{"custom tag", "mirror:\n  additionalImages:\n  - name: !foo quay.io/a/b:1\n", "unsupported YAML tag !foo"},
		{"non-string key", "mirror:\n  ? [a]\n  : b\n", "keys must be field names"},
		{"catalog transport", "mirror:\n  operators:\n  - catalog: file:///x\n", "transport file://"},
		{"docker transport", "mirror:\n  operators:\n  - catalog: docker://quay.io/a/b:1\n", ""},
		{"digest catalog", "mirror:\n  operators:\n  - catalog: quay.io/a/b@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", ""},
		{"oci additional", "mirror:\n  additionalImages:\n  - name: oci:///tmp/x\n", "oci:// is supported only for operator catalogs"},
		{"bad target repo", "mirror:\n  additionalImages:\n  - name: quay.io/a/b:1\n    targetRepo: Foo/Bar\n", `targetRepo "Foo/Bar" must be lowercase`},
		{"bad target tag", "mirror:\n  additionalImages:\n  - name: quay.io/a/b:1\n    targetTag: a:b\n", `targetTag "a:b" is not a valid tag`},
		{"full with bundles", "mirror:\n  operators:\n  - catalog: quay.io/a/b:1\n    full: true\n    packages:\n    - name: p\n      bundles: [{name: p.v1}]\n", "full: true keeps every bundle"},
		{"empty bundle", "mirror:\n  operators:\n  - catalog: quay.io/a/b:1\n    packages:\n    - name: p\n      bundles: [{name: \"\"}]\n", "bundle name is empty"},
		{"min equals max", "mirror:\n  operators:\n  - catalog: quay.io/a/b:1\n    packages:\n    - name: p\n      minVersion: 1.0.0\n      maxVersion: 1.0.0\n", ""},
		{"full with channel range", "mirror:\n  operators:\n  - catalog: quay.io/a/b:1\n    full: true\n    packages:\n    - name: p\n      channels: [{name: s, maxVersion: 1.0.0}]\n", "full: true keeps every bundle"},
		{"blocked empty", "mirror:\n  blockedImages:\n  - name: \"\"\n", "blocked image name is empty"},
		{"kind case", "apiVersion: mirror.openshift.io/v2alpha1\nkind: imagesetconfiguration\nmirror: {}\n", "kinds are case-sensitive"},
		{"nested wrong type", "mirror:\n  operators:\n  - catalog: quay.io/a/b:1\n    packages:\n    - name: p\n      channels: stable\n", "channels: expected a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tt.body
			if !strings.HasPrefix(body, "apiVersion") {
				body = head + body
			}
			c, err := Load(strings.NewReader(body), "inline.yaml")
			if tt.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				checkRoundTrip(t, c)
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.err)
			}
			if !strings.HasPrefix(err.Error(), "inline.yaml:") {
				t.Errorf("error does not start with the file name: %v", err)
			}
		})
	}
}

func TestLoadAliasBomb(t *testing.T) {
	// Aliases nest through the typed fields: 300 operators x 300 packages x 300
	// channels from a file of a few kB. The decoder must stop early.
	const n = 300
	rep := func(alias string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(alias+", ", n), ", ") + "]"
	}
	body := "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n" +
		"  additionalImages:\n  - &ch {name: quay.io/a/b:1}\n" +
		"  blockedImages:\n  - &pk {name: p, channels: " + rep("*ch") + "}\n" +
		"  samples:\n  - &op {catalog: quay.io/a/b:1, packages: " + rep("*pk") + "}\n" +
		"  operators: " + rep("*op") + "\n"
	_, err := Load(strings.NewReader(body), "bomb.yaml")
	if err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Fatalf("error = %.300v", err)
	}
}

func TestLoadLimitsAndIO(t *testing.T) {
	big := bytes.Repeat([]byte("#"), MaxConfigSize+10)
	if _, err := Load(bytes.NewReader(big), "big.yaml"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("big: %v", err)
	}
	boom := errors.New("boom")
	if _, err := Load(iotest.ErrReader(boom), "r.yaml"); !errors.Is(err, boom) {
		t.Errorf("reader error: %v", err)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadDeleteFile(filepath.Join(t.TempDir(), "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// checkRoundTrip re-marshals c to JSON, loads it again and compares (without the
// position fields, which differ between the two texts).
func checkRoundTrip(t testing.TB, c *ImageSetConfiguration) {
	t.Helper()
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	c2, err := Load(bytes.NewReader(data), "remarshalled.json")
	if err != nil {
		t.Fatalf("re-load of %s: %v", data, err)
	}
	a, b := stripPositions(c), stripPositions(c2)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("round trip changed the configuration:\nbefore %+v\nafter  %+v\njson %s", a, b, data)
	}
}

func stripPositions(c *ImageSetConfiguration) *ImageSetConfiguration {
	cp := *c
	// Deep copy through reflection, zeroing Line and Source on the way.
	v := reflect.New(reflect.TypeOf(cp)).Elem()
	copyZeroing(v, reflect.ValueOf(cp))
	return v.Addr().Interface().(*ImageSetConfiguration)
}

func copyZeroing(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.New(src.Type().Elem()))
		copyZeroing(dst.Elem(), src.Elem())
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
		for i := 0; i < src.Len(); i++ {
			copyZeroing(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		for i := 0; i < src.NumField(); i++ {
			if n := src.Type().Field(i).Name; n == "Line" || n == "Source" {
				continue
			}
			copyZeroing(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}

func BenchmarkLoad(b *testing.B) {
	data, err := os.ReadFile("testdata/valid/oc-mirror-v2.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(bytes.NewReader(data), "bench.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

// platforms: entries load as os/architecture pairs, os defaulting to linux;
// no entry means every platform (nil).
func TestLoadPlatforms(t *testing.T) {
	c, err := LoadFile("testdata/valid/platforms.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		specs []PlatformSpec
		want  []string
	}{
		{"operator", c.Mirror.Operators[0].Platforms, []string{"linux/amd64", "linux/arm64"}},
		{"additional image", c.Mirror.AdditionalImages[0].Platforms, []string{"linux/arm64"}},
		{"no platforms", c.Mirror.AdditionalImages[1].Platforms, nil},
	}
	for _, tc := range tests {
		if got := PlatformList(tc.specs); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
