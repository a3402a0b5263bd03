/* MIN and MAX that evaluate their arguments once. */
#ifndef NBDCP_MINMAX_H
#define NBDCP_MINMAX_H

#define MIN(a, b)                                                              \
  ({                                                                           \
    __typeof__ (a) a_ = (a);                                                   \
    __typeof__ (b) b_ = (b);                                                   \
    a_ < b_ ? a_ : b_;                                                         \
  })
#define MAX(a, b)                                                              \
  ({                                                                           \
    __typeof__ (a) a_ = (a);                                                   \
    __typeof__ (b) b_ = (b);                                                   \
    a_ > b_ ? a_ : b_;                                                         \
  })

#define IS_POWER_OF_2(x) ((x) != 0 && ((x) & ((x) -1)) == 0)

#endif
