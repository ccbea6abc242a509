# src/backend: sources and programs of this folder
