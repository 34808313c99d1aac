//go:build !unix

package engine

import (
	"context"
	"errors"
	"os"
)

// Without flock, no doctor records its liveness: containers are judged by their age.

var errNoLocks = errors.New("no run locks on this platform")

func lockDir() (dir, token string, err error) { return "", "", errNoLocks }

func readToken(string) (string, error) { return "", errNoLocks }

func lockFile(context.Context, string) (*os.File, error) { return nil, errNoLocks }

func probeLock(string) LockState { return LockUnknown }

func removeIfFree(string) {}
