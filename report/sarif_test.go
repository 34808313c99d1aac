package report

import "testing"

// TestSemanticVersion: SARIF's semanticVersion is set only from a semantic version, such as
// git describe gives on a tagged history; an untagged commit or "dev" leaves it out.
func TestSemanticVersion(t *testing.T) {
	for v, want := range map[string]string{
		"v1.2.3":                   "1.2.3",
		"v0.1.0-3-gabc1234-dirty":  "0.1.0-3-gabc1234-dirty",
		"v2.0.0-rc.1+build.5":      "2.0.0-rc.1+build.5",
		"v0.0.0-20250102-abcdef01": "0.0.0-20250102-abcdef01",
		"07ccb18":                  "",
		"07ccb18-dirty":            "",
		"dev":                      "",
		"v1.2":                     "",
		"v01.2.3":                  "",
		"":                         "",
	} {
		if got := semanticVersion(v); got != want {
			t.Errorf("semanticVersion(%q) = %q, want %q", v, got, want)
		}
	}
}
