package mirror

import (
	"errors"
	"testing"
)

func TestFailHosts(t *testing.T) {
	p := &Plan{Images: []PlanImage{
		{Source: "dead.example/a:1", SourceRepo: "dead.example/a"},
		{Source: "live.example/b:1", SourceRepo: "live.example/b"},
		{Source: "dead.example/c:1", SourceRepo: "dead.example/c", Error: "resolve: earlier"},
	}}
	p.FailHosts(map[string]error{"dead.example": errors.New("registry unreachable: dead.example")})
	want := []string{"registry unreachable: dead.example", "", "resolve: earlier"}
	for i, im := range p.Images {
		if im.Error != want[i] {
			t.Errorf("%s: error %q, want %q", im.Source, im.Error, want[i])
		}
	}
	if jobs := p.Jobs(); len(jobs) != 0 {
		t.Errorf("jobs %+v: the images have no digest, none is copied", jobs)
	}
}
