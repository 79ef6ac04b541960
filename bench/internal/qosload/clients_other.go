//go:build !linux

package qosload

import "errors"

// clients needs Linux: its clients block in epoll_wait.
func clients(job) (loadResult, error) {
	return loadResult{}, errors.New("qosload's clients run on Linux only")
}
