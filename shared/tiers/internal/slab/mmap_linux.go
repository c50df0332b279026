package slab

import "syscall"

// mapAnon reserves n bytes of anonymous memory outside the Go heap. Its
// pages cost nothing until written; huge pages are declined, so that a
// page handed back is a page less resident.
func mapAnon(n int) ([]byte, bool, error) {
	mem, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil, false, err
	}
	_ = syscall.Madvise(mem, madvNoHugePage) // advice: a kernel without it maps small pages anyway
	return mem, true, nil
}

// madvNoHugePage is MADV_NOHUGEPAGE, which package syscall does not name.
const madvNoHugePage = 15

// discard hands pages back to the system: the next write to them maps
// fresh zeroed pages.
func discard(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }

func unmap(b []byte) { _ = syscall.Munmap(b) }
