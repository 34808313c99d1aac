package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestVersionedLines: lines of this version are read; lines of another version, or of none
// (agents before versions), are counted in Err and never folded into the report.
func TestVersionedLines(t *testing.T) {
	out, err := ParseOutput(strings.NewReader(`{"protocol":1,"event":"measure","report":{"path":"/dev/shm","exists":true}}
{"protocol":1,"event":"progress","mode":"write","bytes":5,"target":10}
{"protocol":1,"event":"report","report":{"path":"/dev/shm","exists":true,"size_bytes":1}}
`))
	if err != nil || out.Err != nil || !out.Complete || out.Report == nil || *out.Report.SizeBytes != 1 || out.ProgressBytes != 5 {
		t.Fatalf("this version: %+v %v", out, err)
	}
	for _, line := range []string{
		`{"event":"report","report":{"path":"/dev/shm","exists":true}}`,
		`{"protocol":2,"event":"report","report":{"path":"/dev/shm","exists":true}}`,
	} {
		out, err := ParseOutput(strings.NewReader(line + "\n"))
		var mm *MismatchError
		if err != nil || out.Report != nil || out.Complete || !errors.As(out.Err, &mm) || mm.Side != "agent" {
			t.Errorf("%s: %+v %v: want the line refused", line, out, err)
			continue
		}
		if msg := out.Err.Error(); !strings.Contains(msg, "the agent speaks protocol") || !strings.Contains(msg, "this doctor protocol 1") {
			t.Errorf("%s: message %q", line, msg)
		}
	}
	// Other lines are counted, as before versions.
	if out, _ := ParseOutput(strings.NewReader("hello\n{\"x\":1}\n\n")); out.Other != 2 || out.Err != nil {
		t.Errorf("other lines: %+v", out)
	}
}

// TestWire: the field names both sides read, as the agent writes them.
func TestWire(t *testing.T) {
	b, _ := json.Marshal(Grant{Protocol: Version, Target: 5})
	if string(b) != `{"protocol":1,"target":5}` {
		t.Errorf("grant %s", b)
	}
	b, _ = json.Marshal(WatchLine{Protocol: Version, SizeBytes: 2, UsedBytes: 1, PeakBytes: 1})
	if string(b) != `{"protocol":1,"size_bytes":2,"used_bytes":1,"peak_bytes":1}` {
		t.Errorf("watch line %s", b)
	}
	var l WatchLine
	_ = json.Unmarshal([]byte(`{"size_bytes":2,"used_bytes":1,"peak_bytes":1}`), &l)
	if l.Check() == nil {
		t.Error("a watch line without a version passed the check")
	}
	if got := Args(); len(got) != 2 || got[0] != "--protocol" || got[1] != "1" {
		t.Errorf("Args %q", got)
	}
	if err := Check(Version, "doctor"); err != nil {
		t.Errorf("Check(Version): %v", err)
	}
	if err := Check(Version+1, "doctor"); err == nil || !strings.Contains(err.Error(), "the doctor speaks agent protocol 2, this agent protocol 1") {
		t.Errorf("Check(other, doctor): %v", err)
	}
}

// TestMerge: the later sample and the higher peak; an error wins until a sample succeeds.
func TestMerge(t *testing.T) {
	a := WatchLine{Protocol: Version, UsedBytes: 5, PeakBytes: 9}
	if got := a.Merge(WatchLine{Protocol: Version, UsedBytes: 3, PeakBytes: 3}); got.UsedBytes != 3 || got.PeakBytes != 9 {
		t.Errorf("merge %+v", got)
	}
	if got := a.Merge(WatchLine{Error: "x"}); got.Error != "x" {
		t.Errorf("merge error %+v", got)
	}
	if got := (WatchLine{Error: "x"}).Merge(WatchLine{UsedBytes: 3, PeakBytes: 3}); got.PeakBytes != 3 || got.Error != "" {
		t.Errorf("merge after error %+v", got)
	}
}
