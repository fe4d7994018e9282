// Server module. See DESIGN.md §3.
