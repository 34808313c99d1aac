package rules_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/shmdoctor/shmdoctor/analyze"
	"github.com/shmdoctor/shmdoctor/analyze/compose"
	"github.com/shmdoctor/shmdoctor/analyze/rules"
	"github.com/shmdoctor/shmdoctor/internal/testutil"
)

// TestCorpusGPUEvidence pins the GPU verdicts on real files: single-process GPU servers and
// bare GPUs, one or all of them, get no SHM010/SHM101; a program whose parameters say it
// shares memory still does.
func TestCorpusGPUEvidence(t *testing.T) {
	dir := testutil.Corpus(t)
	tests := []struct {
		file, service, rule string
		want                bool
	}{
		// Milvus GPU (device_ids ["0"]) and Ollama (count: 1): vendors run them on the default.
		{"compose/milvus-io__milvus/deployments__docker__gpu__standalone__docker-compose.yml", "standalone", "SHM010", false},
		{"compose/valiantlynx__ollama-docker/docker-compose-ollama-gpu.yaml", "ollama", "SHM010", false},
		{"compose/NVIDIA__GenerativeAIExamples/set__basic_rag_langchain/RAG/examples/local_deploy/docker-compose-vectordb.yaml", "milvus", "SHM010", false},
		// A bare GPU: the info line only.
		{"compose/lllyasviel__Fooocus/docker-compose.yml", "app", "SHM010", false},
		{"compose/lllyasviel__Fooocus/docker-compose.yml", "app", "SHM015", true},
		// count: all is every GPU of the host, and names no program: the info line only.
		{"compose/infiniflow__ragflow/docker/docker-compose.yml", "ragflow-gpu", "SHM010", false},
		{"compose/infiniflow__ragflow/docker/docker-compose.yml", "ragflow-gpu", "SHM015", true},
		// Triton's Python backend uses /dev/shm in amounts its models decide: info, no number;
		// a one-GPU job without evidence says nothing.
		{"k8s/GoogleCloudPlatform__kubernetes-engine-samples/ai-ml__gke-online-serving-single-gpu__src__gke-config__deployment-triton.yaml", "Deployment/triton-deployment:triton-server", "SHM101", true},
		{"k8s/GoogleCloudPlatform__kubernetes-engine-samples/ai-ml__axolotl-multimodal-finetuning-gemma__k8s__axolotl-training-job.yaml", "axolotl-training/Job/gemma3-melanoma-training:axolotl", "SHM101", false},
	}
	for _, tt := range tests {
		ps := compose.Load(context.Background(), compose.Options{Paths: []string{filepath.Join(dir, tt.file)}})
		if len(ps) != 1 {
			t.Fatalf("%s: loaded %d projects", tt.file, len(ps))
		}
		if p := ps[0].Plan(tt.service); p == nil {
			t.Errorf("%s: no service %s", tt.file, tt.service)
			continue
		}
		if got := testutil.HasFinding(rules.Check(ps[0], analyze.Config{}), tt.rule, tt.service); got != tt.want {
			t.Errorf("%s: %s on %s = %v, want %v", tt.file, tt.rule, tt.service, got, tt.want)
		}
	}
}
