// HTTP module. See DESIGN.md §3.
