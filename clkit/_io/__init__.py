"""Image and file I/O for the command line and MPI: images, masks from specs and files, the Mandelbrot palette."""
