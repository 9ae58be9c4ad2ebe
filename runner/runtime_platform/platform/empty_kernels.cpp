// Placeholder when a program needs no portable kernel.
namespace etu_placeholder {}
