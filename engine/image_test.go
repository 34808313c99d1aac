package engine

import (
	"strconv"
	"strings"
	"testing"

	dockerspec "github.com/moby/docker-image-spec/specs-go/v1"
	"github.com/moby/moby/api/types/image"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/shmdoctor/shmdoctor/agent/protocol"
)

// TestSpeaks: a probe image is taken as it is only when its label names this protocol; one
// of another protocol, or a probe image from before versions, is imported again.
func TestSpeaks(t *testing.T) {
	with := func(labels map[string]string) client.ImageInspectResult {
		return client.ImageInspectResult{InspectResponse: image.InspectResponse{
			Config: &dockerspec.DockerOCIImageConfig{ImageConfig: ocispec.ImageConfig{Labels: labels}}}}
	}
	this := strconv.Itoa(protocol.Version)
	other := strconv.Itoa(protocol.Version + 1)
	for _, c := range []struct {
		name string
		res  client.ImageInspectResult
		want bool
	}{
		{"this protocol", with(map[string]string{LabelImage: "d", LabelProtocol: this}), true},
		{"another protocol", with(map[string]string{LabelImage: "d", LabelProtocol: other}), false},
		{"a probe image from before versions", with(map[string]string{LabelImage: "d"}), false},
		{"no labels (an engine that reports none)", with(nil), true},
		{"no config", client.ImageInspectResult{}, true},
	} {
		if got := speaks(c.res); got != c.want {
			t.Errorf("%s: speaks %v, want %v", c.name, got, c.want)
		}
	}
	// The identity key of a recorded digest names the protocol too.
	if want := "protocol " + this; !strings.Contains(identityPrefix, want) {
		t.Errorf("identity prefix %q does not name %q", identityPrefix, want)
	}
}
