// Package rules holds the doctor's rules: the registry All and one file per rule. A rule is
// an analyze.Rule value whose Check reads one plan through an analyze.Pass and reports
// findings; it never sees YAML, only the plan, positions from Pass, and the edits the
// project's Document makes for a fix. Adding a rule is a file here, a line in All, a
// fixture folder with its `# want` lines under testdata/rules or testdata/k8s, and docs/rules
// regenerated with make docs.
package rules
