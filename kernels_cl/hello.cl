/*
 * hello.cl -- the first OpenCL program: the device writes "Hello, World!".
 *
 * An OpenCL kernel is a function that the device runs many times at once. Each run is a
 * "work-item"; all work-items execute the same code, and the only thing that tells them apart is
 * their index, get_global_id(0), which goes from 0 to global size - 1. The host chooses the
 * global size when it launches the kernel (here: one work-item per character, 13 of them).
 * Work-items are grouped into "work-groups" that a compute unit runs together; this kernel needs
 * no cooperation between work-items, so any work-group size (local size) will do.
 *
 * Launch (1-D): global size = 13 (the message's length) or more, rounded up to a multiple of the
 * local size: work-items past the end do nothing. out: a char buffer of 13 bytes.
 * The host reads the buffer back and decodes it as text (no terminating zero is written).
 */

/* __constant: read-only memory that every work-item can see, set when the program is built. */
__constant char message[] = "Hello, World!";

/* __global: memory the host allocated on the device (a buffer); the host reads it back. */
__kernel void hello(__global char* out)
{
    /* Which work-item am I? My index is also the position of my character. */
    const size_t i = get_global_id(0);

    /* The global size may have been rounded up: extra work-items must not write.
     * sizeof counts the string's terminating zero, which we do not copy. */
    if (i < sizeof(message) - 1)
        out[i] = message[i];
}
