package analyze

import "slices"

// Variant says how -r checked a compose file kept beside (or instead of) its folder's
// default project, such as docker-compose.gpu.yml or compose.cuda.yaml.
type Variant struct {
	// File is the variant, as displayed.
	File string `json:"file"`
	// Base is the folder's default compose file the variant was merged over, as
	// docker compose -f base -f variant merges it; "" when it was checked alone.
	Base string `json:"base,omitempty"`
	// Why says why it was checked that way.
	Why string `json:"reason"`
	// Of is the folder's default project, nil when the folder has none.
	Of *Project `json:"-"`
}

// Mode is "overlay" for a variant merged over its base, "standalone" for one checked alone.
func (v *Variant) Mode() string {
	if v.Base != "" {
		return "overlay"
	}
	return "standalone"
}

// CheckedAs is the docker compose file flags the variant was checked as.
func (v *Variant) CheckedAs() string {
	if v.Base != "" {
		return "-f " + v.Base + " -f " + v.File
	}
	return "-f " + v.File
}

// Unrepeated drops, from an overlay's findings, those its folder's default project reports
// already (same rule, service, place and message), and the stale-suppression reports of
// the base's own files: the default project reports them. A standalone variant keeps all.
func (v *Variant) Unrepeated(fs, base []Finding) []Finding {
	if v == nil || v.Base == "" || v.Of == nil {
		return fs
	}
	type key struct {
		rule, service, msg string
		pos                Pos
	}
	seen := map[key]bool{}
	for _, f := range base {
		seen[key{f.Rule, f.Service, f.Message, f.Pos}] = true
	}
	return slices.DeleteFunc(slices.Clone(fs), func(f Finding) bool {
		return seen[key{f.Rule, f.Service, f.Message, f.Pos}] || f.Rule == UnusedSuppression && v.Of.reads(f.File)
	})
}

// reads reports whether the project read a file, as named or as displayed.
func (p *Project) reads(file string) bool { return p != nil && p.Doc != nil && p.Doc.Reads(file) }
