# src/optim: sources and programs of this folder
