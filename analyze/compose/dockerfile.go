package compose

import (
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/shmdoctor/shmdoctor/analyze"
)

// dockerfile reads the Dockerfile a service builds, as evidence of the program its image
// runs: only a local file inside both the build context and the project root, bounded, and
// never quoted in a message. A Dockerfile the doctor cannot read is no evidence: nil.
func (p *project) dockerfile(s *types.ServiceConfig) *analyze.Dockerfile {
	b := s.Build
	if b == nil || p.src == nil || b.Context == "" || strings.Contains(b.Context, "://") || strings.HasPrefix(b.Context, "git@") {
		return nil
	}
	name := "Dockerfile"
	var text []byte
	if b.DockerfileInline != "" {
		text = []byte(b.DockerfileInline)
		name = "dockerfile_inline"
	} else {
		if b.Dockerfile != "" {
			name = b.Dockerfile
		}
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(b.Context, path)
		}
		if rel, err := filepath.Rel(b.Context, path); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil // outside the build context
		}
		var err error
		if text, err = p.src.Read(path, false); err != nil {
			return nil
		}
		if r, err := filepath.Rel(p.Dir, path); err == nil && !strings.HasPrefix(r, "..") {
			name = r
		}
	}
	args := map[string]string{}
	for k, v := range b.Args {
		if v != nil {
			args[k] = *v
		}
	}
	d, err := analyze.ParseDockerfile(text, name, b.Target, args)
	if err != nil {
		return nil
	}
	return d
}
