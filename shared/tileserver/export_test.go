package tileserver

// MaxArchiveNames is maxNames, for the tests.
const MaxArchiveNames = maxNames

// ArchiveNames is how many tileset names the archive origin remembers.
func (s *Server) ArchiveNames() int {
	s.archives.mu.Lock()
	defer s.archives.mu.Unlock()
	return len(s.archives.names)
}

// Decodes is how many times a stored tile was decoded whole (or measured)
// for clients without its coding.
func (s *Server) Decodes() int64 { return s.stats.decodes.Load() }
