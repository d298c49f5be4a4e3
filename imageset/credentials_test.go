package imageset

import (
	"strings"
	"testing"
)

// TestCredentialsNeverPrinted: a reference that carries user:password@ is
// refused with the line, the host to log in to, and the password replaced by ***.
func TestCredentialsNeverPrinted(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"catalog", `kind: ImageSetConfiguration
apiVersion: mirror.openshift.io/v2alpha1
mirror:
  operators:
  - catalog: admin:s3cret@registry.example.com/redhat/redhat-operator-index:v4.16
`, `isc.yaml:5:14: mirror.operators[0].catalog: catalog "***@registry.example.com/redhat/redhat-operator-index:v4.16" carries credentials`},
		{"docker catalog", `kind: ImageSetConfiguration
apiVersion: mirror.openshift.io/v2alpha1
mirror:
  operators:
  - catalog: docker://admin:s3cret@registry.example.com/redhat/index:v4.16
`, `catalog "docker://***@registry.example.com/redhat/index:v4.16" carries credentials`},
		{"additional image", `kind: ImageSetConfiguration
apiVersion: mirror.openshift.io/v2alpha1
mirror:
  additionalImages:
  - name: bob:s3cret@quay.io/app/x:1.0
`, `isc.yaml:5:11: mirror.additionalImages[0].name: additional image "***@quay.io/app/x:1.0" carries credentials`},
		{"blocked image", `kind: ImageSetConfiguration
apiVersion: mirror.openshift.io/v2alpha1
mirror:
  additionalImages:
  - name: quay.io/app/x:1.0
  blockedImages:
  - name: bob:s3cret@quay.io/app/y:1.0
`, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(strings.NewReader(tc.doc), "isc.yaml")
			if tc.want == "" {
				if err != nil && strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("the password is printed: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if strings.Contains(msg, "s3cret") {
				t.Fatalf("the password is printed: %s", msg)
			}
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, "podman login") {
				t.Errorf("got %s\nwant it to contain %s and a login hint", msg, tc.want)
			}
		})
	}
}
