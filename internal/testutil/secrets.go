package testutil

import (
	"fmt"
	"strings"
)

// SecretShapes are values a CI environment holds that a pull request could make the doctor
// print: tokens, keys, credentials documents, multi-line keys, passwords with quotes and
// separators, non-ASCII text. Each is longer than analyze.SecretRun.
var SecretShapes = map[string]string{
	"token":    "ghp_AbCdEf0123456789XyZqq",
	"aws":      "AKIAIOSFODNN7EXAMPLE/wJalrXUtnFEMI+K7MDENG+bPxRfiCY",
	"json":     `{"type":"service_account","private_key_id":"f00dfeed1234","client_email":"ci@proj.iam"}`,
	"pem":      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----",
	"password": `p@ss:w0rd/with spaces"and'quotes\back`,
	"unicode":  "секретный-ключ-2024-токен",
	"lower":    "hunter2hunter2hunter2",
}

// SecretKeys are compose files that put the variable SECRET into one key each, as a
// pull request could: every key the doctor reads, or quotes when it refuses the value, and
// keys it never reads. Each file has a second service that loads whatever the first does.
var SecretKeys = map[string]string{
	"shm_size-suffix":     svc(`shm_size: "1g${SECRET}"`),
	"shm_size":            svc(`shm_size: "${SECRET}"`),
	"ipc-service":         svc(`ipc: "service:${SECRET}"`),
	"ipc":                 svc(`ipc: "${SECRET}"`),
	"ipc-container":       svc(`ipc: "container:${SECRET}"`),
	"name":                "name: ${SECRET}\n" + svc(`shm_size: 1g`),
	"name-prefix":         "name: proj-${SECRET}\n" + svc(`shm_size: 1g`),
	"volumes-shm":         svc(`volumes: ["${SECRET}:/dev/shm"]`),
	"volumes-long":        svc("volumes:\n      - type: bind\n        source: \"${SECRET}\"\n        target: /dev/shm"),
	"tmpfs-size":          svc(`tmpfs: ["/dev/shm:size=${SECRET}"]`),
	"ports":               svc(`ports: ["${SECRET}"]`),
	"mem_limit":           svc(`mem_limit: "${SECRET}"`),
	"deploy-memory":       svc("deploy:\n      resources:\n        limits:\n          memory: \"${SECRET}\""),
	"image":               svc(`image: "${SECRET}"`),
	"command":             svc(`command: ["python", "train.py", "--token", "${SECRET}"]`),
	"environment":         svc("environment:\n      TOKEN: \"${SECRET}\""),
	"include":             "include: [\"${SECRET}\"]\n" + svc(`shm_size: 1g`),
	"extends":             svc("extends:\n      file: \"${SECRET}\"\n      service: base"),
	"env_file":            svc(`env_file: ["${SECRET}"]`),
	"need":                svc("x-shmdoctor:\n      need: \"${SECRET}\""),
	"ulimits":             svc("ulimits:\n      memlock: \"${SECRET}\""),
	"container_name":      svc(`container_name: "${SECRET}"`),
	"build-shm":           svc("build:\n      context: .\n      shm_size: \"${SECRET}\""),
	"gpus":                svc("deploy:\n      resources:\n        reservations:\n          devices:\n            - capabilities: [gpu]\n              count: \"${SECRET}\""),
	"dataloader":          svc("x-shmdoctor:\n      dataloader: {workers: \"${SECRET}\"}"),
	"default-nested":      svc(`shm_size: "${UNSET_X:-${SECRET}}"`),
	"required-message":    svc(`shm_size: "${UNSET_X:?${SECRET}}"`),
	"extra_hosts":         svc(`extra_hosts: ["${SECRET}"]`),
	"healthcheck":         svc("healthcheck:\n      interval: \"${SECRET}\""),
	"stop_grace_period":   svc(`stop_grace_period: "${SECRET}"`),
	"ignore":              svc("x-shmdoctor:\n      ignore: [\"${SECRET}\"]"),
	"profiles":            svc(`profiles: ["${SECRET}"]`),
	"network_mode":        svc(`network_mode: "${SECRET}"`),
	"depends_on":          svc(`depends_on: ["${SECRET}"]`),
	"security_opt":        svc(`security_opt: ["${SECRET}"]`),
	"runtime-nvidia-envs": svc("runtime: nvidia\n    environment:\n      NVIDIA_VISIBLE_DEVICES: \"${SECRET}\""),
}

// svc is a compose file whose service app sets the given key.
func svc(key string) string {
	return fmt.Sprintf("services:\n  app:\n    image: python:3.12\n    %s\n  other:\n    image: busybox\n    shm_size: 2g\n", strings.TrimSpace(key))
}

// SecretRuns lists every run of n bytes of value: none may appear in an output.
func SecretRuns(value string, n int) []string {
	var out []string
	for i := 0; i+n <= len(value); i++ {
		out = append(out, value[i:i+n])
	}
	return out
}
