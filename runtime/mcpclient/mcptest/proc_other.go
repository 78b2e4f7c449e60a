//go:build !linux

package mcptest

import "syscall"

func sysProcAttr() *syscall.SysProcAttr { return nil }
