package report

// runSet holds the running packages by path and in the order they started,
// each operation in constant amortised time however many run at once.
type runSet struct {
	byPath map[string]*pkgRun
	order  []*pkgRun // also holds removed runs until the next compaction
}

func (s *runSet) get(path string) *pkgRun { return s.byPath[path] }

func (s *runSet) len() int { return len(s.byPath) }

// add starts p, ending a run of the same path that had no result.
func (s *runSet) add(p *pkgRun) {
	if s.byPath == nil {
		s.byPath = make(map[string]*pkgRun)
	}
	if old := s.byPath[p.path]; old != nil {
		s.remove(old)
	}
	s.byPath[p.path] = p
	s.order = append(s.order, p)
}

func (s *runSet) remove(p *pkgRun) {
	if s.byPath[p.path] != p {
		return
	}
	delete(s.byPath, p.path)
	p.ended = true
	if len(s.order) > 2*len(s.byPath)+16 {
		s.compact()
	}
}

// all returns the running packages in the order they started.
func (s *runSet) all() []*pkgRun {
	s.compact()
	return s.order
}

func (s *runSet) compact() {
	live := s.order[:0]
	for _, p := range s.order {
		if !p.ended {
			live = append(live, p)
		}
	}
	clear(s.order[len(live):])
	s.order = live
}
