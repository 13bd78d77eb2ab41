package workspace

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A workspace that is not there is an error naming the variable it came from; a site with
// none of the hooks gives the attempt none.
func TestSiteWithoutAWorkspace(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "gone")
	s := &Site{Root: missing, Tool: "dispatch"}
	var out bytes.Buffer
	err := s.BeforeLaunch(context.Background(), "claude", t.TempDir(), &out, &out)
	if err == nil || !strings.HasPrefix(err.Error(), "FLEET_WORKSPACE: workspace "+missing+" is not a directory") {
		t.Errorf("BeforeLaunch = %v; want the missing workspace named, with FLEET_WORKSPACE", err)
	}
	if h := (&Site{Tool: "dispatch"}).Hooks("bd-1", t.TempDir(), &out); h != nil {
		t.Errorf("Hooks of a site with nothing = %+v; want nil", h)
	}
	if err := (&Site{}).BeforeLaunch(context.Background(), "claude", t.TempDir(), &out, &out); err != nil || out.Len() != 0 {
		t.Errorf("BeforeLaunch without a workspace = %v, %q; want nothing run", err, out.String())
	}
}
