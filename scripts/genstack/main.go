// Command genstack writes a synthetic compose project of N services for benchmarks: the
// shapes real ML stacks take (GPU trainers behind a YAML anchor, inference servers on the
// host IPC namespace, shareable donors and the sidecars that join them, tmpfs /dev/shm
// mounts, databases and browsers with shm_size and memory limits, x-shmdoctor needs), an
// override file and a .env. The output is deterministic and is accepted by
// `docker compose config -q`, so the doctor and docker compose can be timed on the same
// files.
//
// Usage:
//
//	go run ./scripts/genstack -n 500 -o DIR
//
// DIR receives compose.yaml, compose.override.yaml, .env and the build contexts the
// services name. N is rounded up to a multiple of 10, the size of one group of services.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// groupSize is the number of services one group writes; every group has the whole mix.
const groupSize = 10

func main() {
	n := flag.Int("n", 100, "number of services (rounded up to a multiple of 10)")
	out := flag.String("o", "", "output folder (created if missing)")
	flag.Parse()
	if *out == "" || *n <= 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: genstack -n SERVICES -o DIR")
		os.Exit(2)
	}
	if err := write(*out, *n); err != nil {
		fmt.Fprintf(os.Stderr, "genstack: %v\n", err)
		os.Exit(1)
	}
}

// write creates the project in dir.
func write(dir string, n int) error {
	groups := (n + groupSize - 1) / groupSize
	if err := os.MkdirAll(filepath.Join(dir, "job"), 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	files := []struct {
		name string
		fn   func(io.Writer, int)
	}{
		{"compose.yaml", base},
		{"compose.override.yaml", override},
		{".env", dotEnv},
		{filepath.Join("job", "Dockerfile"), dockerfile},
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.fn, groups); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(path string, fn func(io.Writer, int), groups int) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("creating %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	fn(w, groups)
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func dotEnv(w io.Writer, _ int) {
	fmt.Fprint(w, "MODEL=meta-llama/Llama-3.1-8B-Instruct\nTRAIN_SHM=16g\nPG_SHM=256m\nCUDA_DEVICES=all\n")
}

func dockerfile(w io.Writer, _ int) {
	fmt.Fprint(w, "FROM python:3.12-slim\nRUN pip install --no-cache-dir torch\n")
}

// base writes compose.yaml: anchors first, then groupSize services per group. Service names
// carry the group number so ipc: service: chains stay inside their group.
func base(w io.Writer, groups int) {
	fmt.Fprint(w, `name: benchstack

x-gpu: &gpu
  deploy:
    resources:
      reservations:
        devices:
          - driver: nvidia
            count: all
            capabilities: [gpu]
  ulimits:
    memlock: -1
    stack: 67108864
  environment: &gpu-env
    NVIDIA_VISIBLE_DEVICES: ${CUDA_DEVICES:-all}
    NCCL_DEBUG: WARN

x-logging: &logging
  logging:
    driver: json-file
    options:
      max-size: 10m
      max-file: "3"

services:
`)
	for g := 0; g < groups; g++ {
		group(w, g)
	}
	fmt.Fprint(w, `
volumes:
  models: {}
  pgdata: {}

networks:
  default:
    name: benchstack
`)
}

// group writes one of each shape, numbered g.
func group(w io.Writer, g int) {
	fmt.Fprintf(w, `  trainer-%[1]d:
    <<: [*gpu, *logging]
    image: nvcr.io/nvidia/pytorch:24.08-py3
    command: ["torchrun", "--nproc-per-node=8", "train.py", "--epochs", "3"]
    shm_size: ${TRAIN_SHM}
    mem_limit: 64g
    volumes:
      - models:/models
      - ./data:/data:ro
    x-shmdoctor:
      dataloader: {workers: 8, prefetch_factor: 2, batch_bytes: 128MiB}

  feeder-%[1]d:
    <<: *logging
    image: python:3.12-slim
    command: python -m feeder --queue /dev/shm/q
    ipc: shareable
    shm_size: 4g
    deploy:
      resources:
        limits:
          memory: 16g

  reader-%[1]d:
    image: python:3.12-slim
    command: python -m reader --queue /dev/shm/q
    ipc: service:feeder-%[1]d
    shm_size: 1g
    depends_on: [feeder-%[1]d]

  vllm-%[1]d:
    <<: *logging
    image: vllm/vllm-openai:v0.6.3
    command: ["--model", "${MODEL}", "--tensor-parallel-size", "2"]
    ipc: host
    shm_size: 8g
    gpus: all
    ports: ["%[2]d:8000"]
    healthcheck:
      test: ["CMD", "curl", "-f", "http://localhost:8000/health"]
      interval: 30s
      retries: 5

  triton-%[1]d:
    <<: *gpu
    image: nvcr.io/nvidia/tritonserver:24.08-py3
    command: tritonserver --model-repository=/models
    shm_size: 1g
    tmpfs:
      - /dev/shm:size=2g
      - /tmp
    deploy:
      resources:
        limits:
          memory: 8g
        reservations:
          devices:
            - driver: nvidia
              device_ids: ["0"]
              capabilities: [gpu]

  chrome-%[1]d:
    image: selenium/standalone-chrome:4.25
    profiles: [e2e]
    volumes:
      - type: tmpfs
        target: /dev/shm
    environment:
      SE_NODE_MAX_SESSIONS: "4"

  postgres-%[1]d:
    image: postgres:16
    shm_size: ${PG_SHM}
    mem_limit: 2g
    environment:
      POSTGRES_PASSWORD: example
    volumes:
      - pgdata:/var/lib/postgresql/data

  ray-%[1]d:
    image: rayproject/ray:2.37.0-gpu
    command: ray start --head --block
    shm_size: 10g
    mem_limit: 8g
    x-shmdoctor:
      need: 12g

  web-%[1]d:
    <<: *logging
    image: nginx:1.27
    ports: ["%[3]d:80"]
    depends_on:
      vllm-%[1]d:
        condition: service_healthy

  job-%[1]d:
    build:
      context: ./job
      shm_size: 2g
    ipc: service:trainer-%[1]d
    environment:
      <<: *gpu-env
      JOB: "%[1]d"
    x-shmdoctor:
      ignore: [SHM030]

`, g, 20000+g, 30000+g)
}

// override writes compose.override.yaml: every third group's trainer and postgres are
// resized, the way a developer's local override does.
func override(w io.Writer, groups int) {
	fmt.Fprint(w, "services:\n")
	for g := 0; g < groups; g += 3 {
		fmt.Fprintf(w, `  trainer-%[1]d:
    shm_size: 32g
    environment:
      NCCL_DEBUG: INFO
  postgres-%[1]d:
    mem_limit: 4g
`, g)
	}
}
