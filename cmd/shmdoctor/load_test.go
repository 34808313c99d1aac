package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestRealWorldInput runs the command on broken real-world projects next to a good one: each
// broken one gets its error at the offending line and column (or, for an unset variable, a
// note and an analysis), the good one is still analysed, the exit status is 2 when any
// project could not be loaded, and no variable's value is printed.
func TestRealWorldInput(t *testing.T) {
	t.Setenv("SHMDOCTOR_TEST_SECRET", "s3cr3t-token-value")
	good := testutil.WriteFiles(t, map[string]string{"compose.yaml": "services:\n  pg:\n    image: postgres:16\n    x-shmdoctor: {need: 200m}\n"})
	cases := []struct {
		name, src string
		line, col int // 0: the project loads
		msg       string
	}{
		{"unset port", "services:\n  web:\n    image: nginx\n    ports: [\"${SHMDOCTOR_UNSET_PORT}:${SHMDOCTOR_UNSET_PORT}\", \"8080:${SHMDOCTOR_UNSET_X}\"]\n    environment:\n      TOKEN: ${SHMDOCTOR_TEST_SECRET}\n", 0, 0, "SHMDOCTOR_UNSET_PORT, SHMDOCTOR_UNSET_X"},
		{"missing env_file", "services:\n  web:\n    image: nginx\n    env_file: secrets.env\n", 0, 0, "env_file not found"},
		{"unset value compose-go refuses", "services:\n  web:\n    image: nginx\n    blkio_config:\n      weight: ${SHMDOCTOR_UNSET_W}\n", 5, 7, "SHMDOCTOR_UNSET_W"},
		{"bad indentation", "services:\n  web:\n    image: nginx\n   shm_size: 1g\n", 4, 4, "did not find expected key"},
		{"unclosed flow", "services:\n  web:\n    image: nginx\n    ports: [80, 443\n  db:\n    image: postgres\n", 4, 12, "',' or ']'"},
		{"tab", "services:\n  web:\n    image: nginx\n\tshm_size: 1g\n", 4, 1, "tab"},
		{"unclosed quote", "services:\n  web:\n    image: \"nginx\n    shm_size: 1g\n", 3, 12, "end of stream"},
		{"duplicate key", "services:\n  web:\n    image: nginx\n    image: httpd\n", 4, 5, "already defined at line 3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad := testutil.WriteFiles(t, map[string]string{"compose.yaml": c.src})
			code, doc, out := jsonRun(t, "", bad, good)
			if strings.Contains(out, "s3cr3t-token-value") {
				t.Fatal("a variable's value was printed")
			}
			if len(doc.Projects) != 2 || len(doc.Projects[1].Errors) > 0 || len(doc.Projects[1].Services) != 1 {
				t.Fatalf("the good project was not analysed: %s", out)
			}
			p := doc.Projects[0]
			if c.line == 0 {
				if len(p.Errors) > 0 || len(p.Services) == 0 || !strings.Contains(strings.Join(p.Notes, "\n"), c.msg) {
					t.Errorf("not analysed with a note saying %q: %s", c.msg, out)
				}
				if code == exitUsage {
					t.Errorf("exit %d", code)
				}
				return
			}
			if code != exitUsage || len(p.Errors) != 1 {
				t.Fatalf("exit %d, errors %+v", code, p.Errors)
			}
			e := p.Errors[0]
			if got, want := fmt.Sprintf("%s:%d:%d", filepath.Base(e.File), e.Line, e.Column), fmt.Sprintf("compose.yaml:%d:%d", c.line, c.col); got != want || !strings.Contains(e.Message, c.msg) {
				t.Errorf("error at %s %q, want %s %q", got, e.Message, want, c.msg)
			}
		})
	}
}

// TestLoadErrorNamed: a project found by discovery that fails before compose names it is
// reported under its file's name (or its folder's), never an empty name.
func TestLoadErrorNamed(t *testing.T) {
	for _, c := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"compose.yaml": "services:\n  a:\n    image: x\n   bad: [\n"}, "project compose.yaml"},
		{map[string]string{"README": "no compose file here\n"}, "project ."},
	} {
		t.Chdir(testutil.WriteFiles(t, c.files))
		code, out, _ := shmdoctor(t, "", "--probe", "never")
		if code != exitUsage || !strings.HasPrefix(out, c.want+"\n") && !strings.HasPrefix(out, c.want+" (") {
			t.Errorf("exit %d, want the report to start with %q:\n%s", code, c.want, out)
		}
		_, out, _ = shmdoctor(t, "", "--probe", "never", "--format", "json")
		if strings.Contains(out, `"name": ""`) {
			t.Errorf("json names a project \"\":\n%s", out)
		}
	}
}
