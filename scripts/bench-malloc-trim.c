// What one malloc_trim(0) costs the thread that calls it on a large, fragmented glibc heap:
// the serving workers give memory back after a burst (Sources/HTTPServer/Worker.swift,
// trimAfterBurst), and a trim walks every arena's free chunks holding the arena's lock.
//
//   cc -O2 -o /tmp/bench-malloc-trim scripts/bench-malloc-trim.c
//   /tmp/bench-malloc-trim MB PERCENT_FREED      # e.g. 600 10: 600 MB of small blocks, 10 % freed
//
// Blocks of 32 to 511 bytes, one in fifty 4 to 12 KB (the mix of a loaded snapshot's records
// and prepared files), freed at random; three trims in a row, each timed.
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double milliseconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s MB PERCENT_FREED\n", argv[0]);
        return 2;
    }
    long total = atol(argv[1]) << 20, size = 0, count = 0, freed = 0;
    int percent = atoi(argv[2]);
    void **blocks = malloc((total / 32 + 1) * sizeof(void *));
    srand(1);
    while (size < total) {
        size_t n = rand() % 50 == 0 ? 4096 + rand() % 8192 : 32 + rand() % 480;
        char *p = malloc(n);
        p[0] = 1;
        blocks[count++] = p;
        size += n;
    }
    for (long i = 0; i < count; i++)
        if (rand() % 100 < percent) {
            free(blocks[i]);
            freed++;
        }
    for (int k = 0; k < 3; k++) {
        double start = milliseconds();
        malloc_trim(0);
        printf("%ld MB in %ld blocks, %ld freed (%d %%): malloc_trim %.1f ms\n", total >> 20, count, freed, percent,
               milliseconds() - start);
    }
    return 0;
}
