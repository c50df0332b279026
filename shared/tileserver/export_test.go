package tileserver

// ArchiveNames is how many tileset names the archive origin remembers.
func (s *Server) ArchiveNames() int { return s.archives.Names() }

// Decodes is how many times a stored tile was decoded whole (or measured)
// for clients without its coding.
func (s *Server) Decodes() int64 { return s.stats.decodes.Load() }
