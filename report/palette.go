package report

import (
	"charm.land/lipgloss/v2"

	"github.com/shmdoctor/shmdoctor/analyze"
)

// palette holds every style the text renderer uses. Styles are data: renderers pick them by
// name and never build colours themselves.
type palette struct {
	Project, Service, Rule, Pos, Dim, Fix, Header, OK lipgloss.Style
	Severity                                          map[analyze.Severity]lipgloss.Style
}

// newPalette returns the styles; with color off every style renders text unchanged, so
// goldens and CI logs hold no escape codes.
func newPalette(color bool) palette {
	s := lipgloss.NewStyle
	if !color {
		plain := s()
		return palette{plain, plain, plain, plain, plain, plain, plain, plain,
			map[analyze.Severity]lipgloss.Style{analyze.Error: plain, analyze.Warning: plain, analyze.Info: plain}}
	}
	return palette{
		Project: s().Bold(true).Underline(true),
		Service: s().Bold(true),
		Rule:    s().Foreground(lipgloss.Color("5")),
		Pos:     s().Foreground(lipgloss.Color("4")),
		Dim:     s().Faint(true),
		Fix:     s().Foreground(lipgloss.Color("2")),
		Header:  s().Bold(true),
		OK:      s().Foreground(lipgloss.Color("2")).Bold(true),
		Severity: map[analyze.Severity]lipgloss.Style{
			analyze.Error:   s().Foreground(lipgloss.Color("1")).Bold(true),
			analyze.Warning: s().Foreground(lipgloss.Color("3")).Bold(true),
			analyze.Info:    s().Foreground(lipgloss.Color("6")),
		},
	}
}
