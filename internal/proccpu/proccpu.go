// Package proccpu reads the CPU time the process has spent.
package proccpu
