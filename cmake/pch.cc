// The translation unit that carries a precompiled header
// (cmake/AdgraphPch.cmake).
