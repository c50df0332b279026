package tileserver

// MaxArchiveNames is maxNames, for the tests.
const MaxArchiveNames = maxNames

// ArchiveNames is how many tileset names the archive origin remembers.
func (s *Server) ArchiveNames() int {
	s.archives.mu.Lock()
	defer s.archives.mu.Unlock()
	return len(s.archives.names)
}
