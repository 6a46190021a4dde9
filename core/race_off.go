//go:build !race

package core

func raceAcquire() {}
func raceRelease() {}
