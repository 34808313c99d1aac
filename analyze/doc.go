// Package analyze loads compose stacks the way docker compose does, resolves the effective
// /dev/shm of every service into a ShmPlan, and runs the rule registry over the plans.
//
// Rules are values (see Rule); they never format output. Every Finding carries the file, line
// and column of the key that causes it, taken from the source index built beside the
// compose-go project, so override files, extends, include and YAML anchors point to the
// place where the winning value was written.
package analyze
