/* hello: the smallest guest. Prints a line and exits with code 0. */
#include "rt/rt.h"

int main(void)
{
	rt_puts("hello from the guest\n");
	return 0;
}
