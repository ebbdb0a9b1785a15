// Vite handles these imports in the browser builds; the type checker only needs to know they exist.
declare module '*.css';
