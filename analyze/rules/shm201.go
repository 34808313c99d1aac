package rules

import (
	"fmt"

	"github.com/shmdoctor/shmdoctor/analyze"
)

var shm201 = analyze.Rule{
	ID:       "SHM201",
	Name:     "measured-size-differs",
	Severity: analyze.Warning,
	Title:    "measured /dev/shm differs from the prediction",
	Probe:    true,
	Doc: analyze.Doc{
		Rationale: "The probe started a throwaway container with the service's shared-memory settings and " +
			"measured a /dev/shm more than 1% away from what the compose file predicts. The usual cause is " +
			"a daemon `default-shm-size` in daemon.json (every service without `shm_size` gets it), or a " +
			"case the static model gets wrong; either way the measurement is what the service will get.",
		Problematic: "# daemon.json: {\"default-shm-size\": \"128M\"}\nservices:\n  app:\n    image: app   # predicted 64 MiB, measured 128 MiB\n",
		Correct:     "services:\n  app:\n    image: app\n    shm_size: 1g   # explicit: the same on every daemon\n",
		Exceptions:  "Hosts whose daemon default is deliberate: set `shm_size` explicitly so the stack does not depend on it.",
		Sources:     []string{"dockerd reference, default-shm-size: https://docs.docker.com/reference/cli/dockerd/"},
	},
	Check: func(p *analyze.Pass) {
		m, plan := p.Measurement, p.Plan
		if m == nil || m.CreateError != "" || m.Error != "" || plan.Predicted == nil {
			return
		}
		predicted := *plan.Predicted
		measured := int64(0)
		if m.Exists && m.MeasuredBytes != nil {
			measured = *m.MeasuredBytes
		}
		if !m.Exists && predicted == 0 || m.Exists && m.MeasuredBytes == nil {
			return
		}
		diff := measured - predicted
		if diff < 0 {
			diff = -diff
		}
		if float64(diff) <= 0.01*float64(max(predicted, 1)) {
			return
		}
		why := "the model gets this case wrong"
		switch {
		case !m.Exists:
			why = "the container has no /dev/shm"
		case onDefault(plan) && plan.Mount == nil && len(plan.Via) == 0:
			why = fmt.Sprintf("the daemon's default-shm-size is not %s's %s", p.Config.Target.Engine().Name, analyze.FormatSize(p.Config.Target.Engine().DefaultShm))
		}
		p.Report(analyze.Finding{
			Pos:         sizingPos(p),
			Message:     fmt.Sprintf("measured /dev/shm is %s, predicted %s (source %s): %s", analyze.FormatSize(measured), analyze.FormatSize(predicted), plan.Source, why),
			Remediation: fmt.Sprintf("Trust the measurement; set shm_size explicitly (%s) so the service gets the same /dev/shm on every daemon.", analyze.ComposeSize(max(analyze.Friendly(max(measured, predicted)), analyze.RecommendedSize(plan)))),
		})
	},
}

// sizingPos is the key that decides a plan's /dev/shm size: the mount, the ipc key of a
// joiner, shm_size, or the service itself.
func sizingPos(p *analyze.Pass) analyze.Pos {
	switch {
	case p.Plan.Mount != nil:
		return p.MountPos()
	case p.Plan.Source == analyze.SourceService || p.Plan.Source == analyze.SourceContainer || p.Plan.Source == analyze.SourceHost || p.Plan.Source == analyze.SourceNone:
		return p.At("ipc")
	case p.Plan.Configured != nil:
		return p.At(analyze.ShmKey)
	}
	return p.ServicePos()
}
